-- The families that have a setting (rota.core.queue_controls.settings_in_force), on the
-- partial index of migration 21: read by a limited claim, after claim.sql found a control.
SELECT queue, paused, concurrency_limit, rate_jobs, rate_per_us, rate_burst
FROM {schema}.queue_settings
WHERE right(queue, 1) = '*'
  AND (paused OR concurrency_limit IS NOT NULL OR rate_jobs IS NOT NULL)
