-- An operator's listing: id order, optional filters by Queue, state and job name (NULL means any), paged by :offset.
SELECT id, name, queue, state, attempt, due_at, args, kwargs, last_error, created_at,
       lease_owner, lease_expires_at, started_at, result,
       cancel_requested, finished_at, key, last_traceback, parents, meta,
       snoozes, expires_at,
       progress, errors, worker, after_outcome
FROM rota_jobs
WHERE (:queue IS NULL OR queue = :queue) AND (:state IS NULL OR state = :state)
  AND (:name IS NULL OR name = :name)
ORDER BY id
LIMIT :limit OFFSET :offset;
