-- A scheduled or waiting job is cancelled at once (and so finished: the settle trigger of
-- migration 14 settles its children); a leased one gets a cancel request, which its worker
-- learns from its next heartbeat. Any other state: no row changes.
-- Returns the id of a job with children that it ended (NULL otherwise), for wake-ups.
UPDATE rota_jobs
SET state = CASE WHEN state IN ('scheduled', 'waiting') THEN 'cancelled' ELSE state END,
    finished_at = CASE WHEN state IN ('scheduled', 'waiting') THEN :now ELSE finished_at END,
    -- a job cancelled before it ran says so; a leased one keeps its error until it ends
    last_error = CASE WHEN state = 'leased' THEN last_error ELSE :cancelled_error END,
    last_traceback = CASE WHEN state = 'leased' THEN last_traceback END,
    cancel_requested = CASE state WHEN 'leased' THEN 1 ELSE cancel_requested END
WHERE id = :id AND state IN ('scheduled', 'leased', 'waiting')
RETURNING CASE WHEN has_children AND state = 'cancelled' THEN id END;
