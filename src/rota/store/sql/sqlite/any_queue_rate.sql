-- Whether any Queue has a rate limit: asked once per claim, inside its write transaction,
-- so that claims on a store without rates read no settings row more than before. One
-- seek on the partial index rota_queue_settings_rated (migration 11).
SELECT EXISTS (SELECT 1 FROM rota_queue_settings WHERE rate_jobs IS NOT NULL);
