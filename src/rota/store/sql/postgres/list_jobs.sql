-- Jobs in id order, optionally filtered by Queue, state and job name (NULL: any), paged by offset.
SELECT id, name, queue, state, attempt, due_at, args::text, kwargs::text, last_error,
       created_at, lease_owner, lease_expires_at, started_at, result::text,
       cancel_requested, finished_at, key, last_traceback, parents, meta::text,
       snoozes, expires_at,
       progress::text, errors::text, worker, after_outcome
FROM {schema}.jobs
WHERE (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(name)s::text IS NULL OR name = %(name)s::text)
ORDER BY id
LIMIT %(limit)s OFFSET %(offset)s
