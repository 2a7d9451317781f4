-- Every job in :state (one of dead_lettered, quarantined, cancelled: the store checks),
-- of :queue or of every Queue when it is NULL, back to scheduled: attempt 0, due now, a
-- fresh run (last error and traceback cleared).
-- A debounced job comes back as a plain one (debounce_key cleared): it no longer
-- collects its key's enqueues, so it never meets another collector in its index.
-- Unique jobs: a keyed job is left where it is while another live job holds its name and
-- key, and of several selected jobs sharing a name and key only the oldest (lowest id)
-- goes back, so a key is never live twice.
UPDATE rota_jobs
SET state = 'scheduled', attempt = 0, due_at = :now, result = NULL, cancel_requested = 0,
    finished_at = NULL, last_error = NULL, last_traceback = NULL,
    snoozes = 0, expires_at = NULL, progress = NULL,
    debounce_key = NULL
WHERE state = :state AND (:queue IS NULL OR queue = :queue)
  AND (key IS NULL OR (
      NOT EXISTS (
          SELECT 1 FROM rota_jobs AS live
          WHERE live.name = rota_jobs.name AND live.key = rota_jobs.key
            AND live.key IS NOT NULL AND live.state IN ('scheduled', 'leased'))
      AND id = (
          SELECT min(same.id) FROM rota_jobs AS same
          WHERE same.name = rota_jobs.name AND same.key = rota_jobs.key
            AND same.state = :state AND (:queue IS NULL OR same.queue = :queue))))
RETURNING queue;
