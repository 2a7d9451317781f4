-- Returns the id of a job with children that it ended (NULL otherwise): the store
-- wakes the Queues of the children that the settle trigger released.
UPDATE rota_jobs
SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'scheduled' END,
    -- a job whose cancel was requested never goes back to scheduled
    due_at = :due_at,
    last_error = CASE WHEN cancel_requested THEN :cancelled_error ELSE :error END,
    -- the traceback goes with the error it explains (NULL beside a cancel)
    last_traceback = CASE WHEN cancel_requested THEN NULL ELSE :traceback END,
    finished_at = CASE WHEN cancel_requested THEN :now END,
    lease_owner = NULL, lease_expires_at = NULL
WHERE id = :id AND state = 'leased' AND lease_owner = :owner AND attempt = :attempt
RETURNING CASE WHEN has_children AND state = 'cancelled' THEN id END;
