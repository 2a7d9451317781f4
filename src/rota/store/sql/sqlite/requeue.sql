-- A dead_lettered, quarantined or cancelled job back to scheduled: attempt 0, due now, a
-- fresh run (its last error and traceback cleared with its attempts).
-- A debounced job comes back as a plain one (debounce_key cleared): it no longer
-- collects its key's enqueues, so it never meets another collector in its index.
-- Unique jobs: not while another live job holds its name and key (the requeue answers
-- False; the key's live job stands for it).
UPDATE rota_jobs
SET state = 'scheduled', attempt = 0, due_at = :now, result = NULL, cancel_requested = 0,
    finished_at = NULL, last_error = NULL, last_traceback = NULL,
    snoozes = 0, expires_at = NULL, progress = NULL,
    debounce_key = NULL
WHERE id = :id AND state IN ('dead_lettered', 'quarantined', 'cancelled')
  AND (key IS NULL OR NOT EXISTS (
      SELECT 1 FROM rota_jobs AS live
      WHERE live.name = rota_jobs.name AND live.key = rota_jobs.key
        AND live.key IS NOT NULL AND live.state IN ('scheduled', 'leased')))
RETURNING queue;
