-- Migration 19: snoozes and expiry.
-- {schema} is replaced by the store's schema, quoted as an identifier.
--
-- snoozes: how many times the job's handler raised rota.Snooze (snooze.sql); cleared by
-- a requeue. expires_at: no attempt starts after it (configure(expires=...)); a claim
-- that finds the job due later ends it cancelled instead of leasing it (claim.sql's
-- leased CTE); NULL: never expires.
-- A column with a constant default, and a nullable one without a default, only change
-- the catalog (PostgreSQL 11+): no row is rewritten, and no index is added.
ALTER TABLE {schema}.jobs ADD COLUMN snoozes integer NOT NULL DEFAULT 0;
ALTER TABLE {schema}.jobs ADD COLUMN expires_at timestamptz;
