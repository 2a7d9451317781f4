-- Migration 18: snoozes and expiry.
--
-- snoozes: how many times the job's handler raised rota.Snooze (snooze.sql); cleared by
-- a requeue. expires_at (microseconds since the epoch, as every time here): no attempt
-- starts after it (configure(expires=...)); a claim that finds the job due later ends it
-- cancelled instead of leasing it (claim.sql); NULL: never expires.
-- SQLite adds a column with a constant default, or a nullable one, without rewriting a
-- row; no index is added.
ALTER TABLE rota_jobs ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_jobs ADD COLUMN expires_at INTEGER;

PRAGMA user_version = 18;
