-- The parents named by a batch of children being enqueued: lock each (FOR NO KEY UPDATE,
-- in id order) and read its state after any finish that committed first, so that a
-- parent's finish and its child's enqueue are serialised. SKIP LOCKED: a parent held by
-- another transaction (a batch of outcomes, say) is not waited for while this one holds
-- others, which could deadlock with a batch that holds them in another order; such a
-- parent comes back with state NULL, and the store waits for it alone (wait_for_job.sql,
-- holding no parent) and tries again. A parent missing from the rows does not exist.
WITH locked AS (
    SELECT jobs.id, jobs.state
    FROM {schema}.jobs
    WHERE jobs.id = ANY (%(ids)s::bigint[])
    ORDER BY jobs.id
    FOR NO KEY UPDATE SKIP LOCKED
)
SELECT locked.id, locked.state FROM locked
UNION ALL
SELECT jobs.id, NULL
FROM {schema}.jobs
WHERE jobs.id = ANY (%(ids)s::bigint[])
  AND jobs.id NOT IN (SELECT locked.id FROM locked)
