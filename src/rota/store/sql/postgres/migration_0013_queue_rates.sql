-- Migration 13: Queue rate limits, in the Queue's settings row (rota.core.rates).
-- {schema} is replaced by the store's schema, quoted as an identifier.
--
-- rate_jobs tokens per rate_per_us microseconds, at most rate_burst in the bucket; all
-- three NULL: no rate. The bucket is one instant, when it is (or was) empty:
-- rate_empty_us + rate_empty_rem / rate_jobs microseconds after the epoch; NULL: full (a
-- new rate, never taken from). A rated Queue's claim locks its settings row as a limited
-- Queue's does (lock_queue_limits.sql), so the read, the claim and the write of the bucket
-- are one step for all claimers. Nullable columns without defaults: no row is rewritten.
ALTER TABLE {schema}.queue_settings
    ADD COLUMN rate_jobs integer CHECK (rate_jobs >= 1),
    ADD COLUMN rate_per_us bigint CHECK (rate_per_us >= 1),
    ADD COLUMN rate_burst integer CHECK (rate_burst >= 1),
    ADD COLUMN rate_empty_us bigint,
    ADD COLUMN rate_empty_rem bigint;
