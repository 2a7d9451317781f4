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
    -- the failed attempt appended to the last 20 (rota.core.progress.MAX_KEPT_ERRORS)
    errors = json_insert(CASE WHEN json_array_length(coalesce(errors, '[]')) >= 20
                          THEN json_remove(errors, '$[0]') ELSE coalesce(errors, '[]') END,
                     '$[#]', json(:attempt_error)),
    lease_owner = NULL, lease_expires_at = NULL
WHERE id = :id AND state = 'leased' AND lease_owner = :owner AND attempt = :attempt
RETURNING CASE WHEN has_children AND state = 'cancelled' THEN id END;
