-- The job collecting enqueues of a debounced name and key, if any: scheduled and never
-- claimed (rota_jobs_debounce_key). The caller holds the write lock, so it cannot be
-- claimed before debounce_update.sql runs.
SELECT id FROM rota_jobs
WHERE name = :name AND debounce_key = :key AND debounce_key IS NOT NULL
  AND state = 'scheduled' AND started_at IS NULL;
