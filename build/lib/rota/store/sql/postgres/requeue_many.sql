-- Every job in `state` (one of dead_lettered, quarantined, cancelled: the store checks),
-- of `queue` or of every Queue when it is NULL, back to scheduled: attempt 0, due now.
UPDATE {schema}.jobs
SET state = 'scheduled', attempt = 0, due_at = %(now)s, finished_at = NULL, result = NULL,
    cancel_requested = false
WHERE state = %(state)s::text AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
