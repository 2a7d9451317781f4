-- Migration 9: each worker's clock offset to the store's clock (seconds; positive: the
-- worker's machine runs ahead), refreshed with its heartbeats, shown by `rota workers`.
ALTER TABLE rota_workers ADD COLUMN clock_offset REAL NOT NULL DEFAULT 0;

PRAGMA user_version = 9;
