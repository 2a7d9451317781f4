-- Wait until no other transaction holds the job's row (lock_parents.sql found it held);
-- the store rolls the lock back at once: this only waits.
SELECT jobs.id FROM {schema}.jobs WHERE jobs.id = %(id)s FOR NO KEY UPDATE
