-- Migration 13: Queue rate limits, in the Queue's settings row (rota.core.rates).
-- rate_jobs tokens per rate_per_us microseconds, at most rate_burst in the bucket; all
-- three NULL: no rate. The bucket is one instant, when it is (or was) empty:
-- rate_empty_us + rate_empty_rem / rate_jobs microseconds after the epoch; NULL: full (a
-- new rate, never taken from). Claims read and write it in their own write transaction.
-- Nullable columns without defaults: SQLite rewrites no rows to add them.
ALTER TABLE rota_queue_settings ADD COLUMN rate_jobs INTEGER CHECK (rate_jobs >= 1);
ALTER TABLE rota_queue_settings ADD COLUMN rate_per_us INTEGER CHECK (rate_per_us >= 1);
ALTER TABLE rota_queue_settings ADD COLUMN rate_burst INTEGER CHECK (rate_burst >= 1);
ALTER TABLE rota_queue_settings ADD COLUMN rate_empty_us INTEGER;
ALTER TABLE rota_queue_settings ADD COLUMN rate_empty_rem INTEGER;
-- Whether any Queue has a rate, asked once per claim (any_queue_rate.sql): one seek.
CREATE INDEX rota_queue_settings_rated ON rota_queue_settings (queue)
    WHERE rate_jobs IS NOT NULL;

PRAGMA user_version = 13;
