-- Whether any Queue has a rate limit, and whether any family has a setting: asked once per
-- claim, inside its write transaction, so that claims on a store without either read no
-- settings row more than before. One seek of each partial index: rota_queue_settings_rated
-- (migration 13) and rota_queue_settings_families (migration 20).
SELECT EXISTS (SELECT 1 FROM rota_queue_settings WHERE rate_jobs IS NOT NULL),
       EXISTS (SELECT 1 FROM rota_queue_settings WHERE queue GLOB '*[*]');
