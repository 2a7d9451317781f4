-- A dead_lettered, quarantined or cancelled job back to scheduled: attempt 0, due now.
UPDATE rota_jobs
SET state = 'scheduled', attempt = 0, due_at = :now, result = NULL, cancel_requested = 0,
    finished_at = NULL
WHERE id = :id AND state IN ('dead_lettered', 'quarantined', 'cancelled');
