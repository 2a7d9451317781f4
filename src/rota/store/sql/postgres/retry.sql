-- Sent inside a statement that also sends the finish hint (rota.store.postgres.schema,
-- FINISHING).
-- Schedule a leased job again at `due_at` with its error, fenced by its lease.
UPDATE {schema}.jobs
-- A job whose cancel was requested never goes back to scheduled: it ends cancelled.
SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'scheduled' END,
    due_at = %(due_at)s,
    last_error = CASE WHEN cancel_requested THEN %(cancelled_error)s::text ELSE %(error)s END,
    -- the traceback goes with the error it explains (NULL beside a cancel)
    last_traceback = CASE WHEN cancel_requested THEN NULL ELSE %(traceback)s::text END,
    finished_at = CASE WHEN cancel_requested THEN %(now)s::timestamptz END,
    lease_owner = NULL,
    lease_expires_at = NULL
WHERE id = %(id)s
  AND state = 'leased'
  AND lease_owner = %(owner)s
  AND attempt = %(attempt)s
