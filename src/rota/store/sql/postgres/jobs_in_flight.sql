-- The leased jobs of the given lease owners (a worker's groups), longest running first.
-- `lease_expires_at IS NOT NULL` lets the walk use jobs_lease_expiry, whose rows are the
-- leased jobs: the jobs table itself is never scanned.
SELECT id, name, queue, state, attempt, due_at, args::text, kwargs::text, last_error,
       created_at, lease_owner, lease_expires_at, started_at, result::text,
       cancel_requested, finished_at, key, last_traceback, parents, meta::text,
       snoozes, expires_at,
       progress::text, errors::text, worker, after_outcome
FROM {schema}.jobs
WHERE lease_expires_at IS NOT NULL AND state = 'leased'
  AND lease_owner = ANY (%(owners)s::text[])
ORDER BY started_at, id
LIMIT %(limit)s
