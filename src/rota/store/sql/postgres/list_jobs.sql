-- Jobs in id order, optionally filtered by Queue and state (NULL: any), paged by offset.
SELECT id, name, queue, state, attempt, due_at, args::text, kwargs::text, last_error,
       created_at, lease_owner, lease_expires_at, started_at, result::text,
       cancel_requested, finished_at, key
FROM {schema}.jobs
WHERE (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(state)s::text IS NULL OR state = %(state)s::text)
ORDER BY id
LIMIT %(limit)s OFFSET %(offset)s
