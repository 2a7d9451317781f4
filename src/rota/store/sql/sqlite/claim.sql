-- Lease up to :limit due jobs of one Queue, due-time order, ties by id (enqueue order).
-- The literal state = 'scheduled' lets the planner use the partial index.
-- RETURNING rows come back in no guaranteed order: the caller sorts them.
UPDATE rota_jobs
SET state = 'leased',
    attempt = attempt + 1,
    lease_owner = :owner,
    lease_expires_at = :lease_expires_at,
    started_at = :now
WHERE id IN (
    SELECT id FROM rota_jobs
    WHERE state = 'scheduled' AND queue = :queue AND due_at <= :now
    ORDER BY due_at, id
    LIMIT :limit
)
RETURNING id, name, queue, state, attempt, due_at, args, kwargs, last_error, created_at,
          lease_owner, lease_expires_at, started_at, result,
          cancel_requested, finished_at;
