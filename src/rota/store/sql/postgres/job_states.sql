-- The states of the jobs a waiter waits for (`App.wait`), in one read by primary key. A
-- job that does not exist (purged) is left out.
SELECT id, state
FROM {schema}.jobs
WHERE id = ANY (%(ids)s::bigint[])
