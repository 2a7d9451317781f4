-- Lease up to :limit due jobs of one Queue, due-time order, ties by id (enqueue order).
-- The literal state = 'scheduled' lets the planner use the partial index.
-- RETURNING rows come back in no guaranteed order: the caller sorts them.
--
-- Queue controls: the LIMIT is the Queue's room (rota.core.queue_controls.room): 0 while
-- it is paused; with a concurrency limit, the limit less its jobs leased now (counted on
-- the partial index rota_jobs_leased). The caller holds the write lock (BEGIN IMMEDIATE),
-- so no other claimer can lease between the count and this UPDATE.
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
    LIMIT (
        SELECT CASE
            WHEN settings.paused THEN 0
            WHEN settings.concurrency_limit IS NULL THEN :limit
            ELSE max(0, min(:limit, settings.concurrency_limit - (
                SELECT count(*) FROM rota_jobs AS leased
                WHERE leased.state = 'leased' AND leased.queue = :queue
            )))
        END
        FROM (SELECT 1) LEFT JOIN rota_queue_settings AS settings ON settings.queue = :queue
    )
)
-- The columns the claim just set (state, lease_owner, lease_expires_at, started_at) are the
-- caller's own parameters: it does not read them back.
RETURNING id, name, queue, attempt, due_at, args, kwargs, last_error, created_at, result,
          cancel_requested, finished_at, trace_context, parents;
