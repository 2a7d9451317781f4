-- Delete up to `limit` finished jobs in `states` that finished before `finished_before`.
--
-- The subquery walks the partial index jobs_finished (state, finished_at) and locks what
-- it picks with SKIP LOCKED: purgers on many machines take disjoint batches and never wait
-- for one another, nor for a writer that holds a row (a requeue, say). The DELETE checks
-- state and finished_at again on the rows it found by primary key, so a row that left its
-- finished state meanwhile is never deleted. ANY(ARRAY(...)): a primary-key lookup in the
-- generic plan too (see claim.sql).
WITH doomed AS (
    SELECT jobs.id
    FROM {schema}.jobs
    WHERE jobs.state = ANY (%(states)s::text[])
      AND jobs.finished_at IS NOT NULL
      AND jobs.finished_at < %(finished_before)s
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
DELETE FROM {schema}.jobs AS jobs
WHERE jobs.id = ANY (ARRAY(SELECT doomed.id FROM doomed))
  AND jobs.state = ANY (%(states)s::text[])
  AND jobs.finished_at < %(finished_before)s
