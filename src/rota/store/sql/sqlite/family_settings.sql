-- The families that have a setting (rota.core.queue_controls.settings_in_force): read by
-- every claim, inside its write transaction, on the partial index of migration 20.
SELECT queue, paused, concurrency_limit, rate_jobs, rate_per_us, rate_burst
FROM rota_queue_settings
WHERE queue GLOB '*[*]'
  AND (paused OR concurrency_limit IS NOT NULL OR rate_jobs IS NOT NULL);
