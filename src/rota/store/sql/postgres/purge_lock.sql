-- The first statement of a purge's transaction: pick up to `limit` finished jobs in
-- `states` that finished before `finished_before`, and lock them.
--
-- It walks the partial index jobs_finished (state, finished_at) and locks what it picks
-- with SKIP LOCKED: purgers on many machines take disjoint batches and never wait for one
-- another, nor for a writer that holds a row (a requeue, or the enqueue of a child).
SELECT jobs.id
FROM {schema}.jobs
WHERE jobs.state = ANY (%(states)s::text[])
  AND jobs.finished_at IS NOT NULL
  AND jobs.finished_at < %(finished_before)s
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
