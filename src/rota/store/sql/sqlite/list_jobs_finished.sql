-- Jobs of one finished state, most recently finished first (finished_at, then id, descending), optionally filtered by Queue and job name (NULL: any), paged by :offset. It walks rota_jobs_finished (state, finished_at, and the rowid every SQLite index ends with) backwards: a page costs the rows of that state it reads, whatever the jobs of other states.
SELECT id, name, queue, state, attempt, due_at, args, kwargs, last_error, created_at,
       lease_owner, lease_expires_at, started_at, result,
       cancel_requested, finished_at, key, last_traceback, parents, meta,
       snoozes, expires_at,
       progress, errors, worker, after_outcome
FROM rota_jobs
WHERE state = :state AND finished_at IS NOT NULL
  AND (:queue IS NULL OR queue = :queue)
  AND (:name IS NULL OR name = :name)
ORDER BY finished_at DESC, id DESC
LIMIT :limit OFFSET :offset;
