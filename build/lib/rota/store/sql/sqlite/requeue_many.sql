-- Every job in :state (one of dead_lettered, quarantined, cancelled: the store checks),
-- of :queue or of every Queue when it is NULL, back to scheduled: attempt 0, due now.
UPDATE rota_jobs
SET state = 'scheduled', attempt = 0, due_at = :now, result = NULL, cancel_requested = 0,
    finished_at = NULL
WHERE state = :state AND (:queue IS NULL OR queue = :queue);
