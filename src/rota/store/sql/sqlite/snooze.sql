-- rota.Snooze: schedule a leased job again at :due_at, fenced by its lease, without
-- counting the attempt it was claimed for (attempt - 1, as release.sql) and counting the
-- snooze; last_error and last_traceback are kept (a snooze is no failure).
-- A job whose cancel was requested never goes back to scheduled: it ends cancelled.
-- Returns the id of a job with children that it ended (NULL otherwise): the store
-- wakes the Queues of the children that the settle trigger released.
UPDATE rota_jobs
SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'scheduled' END,
    attempt = CASE WHEN cancel_requested THEN attempt ELSE attempt - 1 END,
    snoozes = CASE WHEN cancel_requested THEN snoozes ELSE snoozes + 1 END,
    due_at = CASE WHEN cancel_requested THEN due_at ELSE :due_at END,
    last_error = CASE WHEN cancel_requested THEN :cancelled_error ELSE last_error END,
    last_traceback = CASE WHEN cancel_requested THEN NULL ELSE last_traceback END,
    finished_at = CASE WHEN cancel_requested THEN :now END,
    lease_owner = NULL, lease_expires_at = NULL
WHERE id = :id AND state = 'leased' AND lease_owner = :owner AND attempt = :attempt
RETURNING CASE WHEN has_children AND state = 'cancelled' THEN id END;
