-- A dead_lettered, quarantined or cancelled job back to scheduled: attempt 0, due now.
UPDATE {schema}.jobs
SET state = 'scheduled', attempt = 0, due_at = %(now)s, finished_at = NULL, result = NULL,
    cancel_requested = false
WHERE id = %(id)s AND state IN ('dead_lettered', 'quarantined', 'cancelled')
