-- Leased jobs whose lease expired at or before `now`, oldest expiry first.
SELECT id, name, queue, state, attempt, due_at, args::text, kwargs::text, last_error,
       created_at, lease_owner, lease_expires_at, started_at, result::text,
       cancel_requested, finished_at, key, last_traceback, parents, meta::text,
       snoozes, expires_at,
       progress::text, errors::text, worker, after_outcome
FROM {schema}.jobs
WHERE state = 'leased' AND lease_expires_at <= %(now)s
ORDER BY lease_expires_at, id
LIMIT %(limit)s
