-- Migration 2: the job lifecycle columns.
-- started_at: when the last attempt started (its claim), microseconds since the epoch.
-- result: the handler's return value of a succeeded job, as JSON text (NULL: none).
-- cancel_requested: 1 once a cancel was requested while the job was leased; its worker
-- learns it from its next heartbeat.
ALTER TABLE rota_jobs ADD COLUMN started_at INTEGER;
ALTER TABLE rota_jobs ADD COLUMN result TEXT;
ALTER TABLE rota_jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;

PRAGMA user_version = 2;
