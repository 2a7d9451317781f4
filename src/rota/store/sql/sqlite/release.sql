-- Positional parameters: 1 error for a job whose cancel was requested (it never goes
-- back to scheduled: it ends cancelled), 2 its finished_at, 3 id, 4 owner, 5 attempt.
-- Fenced by the lease.
-- Back to its Queue at its old due time; the attempt it was claimed for does not count.
UPDATE rota_jobs
SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'scheduled' END,
    attempt = CASE WHEN cancel_requested THEN attempt ELSE attempt - 1 END,
    last_error = CASE WHEN cancel_requested THEN ? ELSE last_error END,
    last_traceback = CASE WHEN cancel_requested THEN NULL ELSE last_traceback END,
    finished_at = CASE WHEN cancel_requested THEN ? END,
    lease_owner = NULL, lease_expires_at = NULL
WHERE id = ? AND state = 'leased' AND lease_owner = ? AND attempt = ?;
