-- Migration 2: the job lifecycle columns. Adding a column with a constant default
-- rewrites no rows (PostgreSQL 11+), so this is quick on a big table.
-- started_at: when the last attempt started (its claim).
-- result: the handler's return value of a succeeded job (NULL: none).
-- cancel_requested: set once a cancel was requested while the job was leased; its worker
-- learns it from its next heartbeat. No index: heartbeats read it by primary key.
ALTER TABLE {schema}.jobs
    ADD COLUMN started_at       timestamptz,
    ADD COLUMN result           json,
    ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;
