-- The leased jobs of the given lease owners (a worker's groups: a JSON array), longest
-- running first. `state = 'leased'` walks rota_jobs_leased, never the whole table.
SELECT id, name, queue, state, attempt, due_at, args, kwargs, last_error, created_at,
       lease_owner, lease_expires_at, started_at, result,
       cancel_requested, finished_at, key, last_traceback, parents, meta,
       snoozes, expires_at,
       progress, errors, worker, after_outcome
FROM rota_jobs
WHERE state = 'leased' AND lease_owner IN (SELECT value FROM json_each(:owners))
ORDER BY started_at, id
LIMIT :limit;
