SELECT id, name, queue, state, attempt, due_at, args, kwargs, last_error, created_at,
       lease_owner, lease_expires_at, started_at, result,
       cancel_requested, finished_at, key, last_traceback, parents, meta,
       snoozes, expires_at,
       progress, errors, worker, after_outcome
FROM rota_jobs
WHERE state = 'leased' AND lease_expires_at <= :now
ORDER BY lease_expires_at, id
LIMIT :limit;
