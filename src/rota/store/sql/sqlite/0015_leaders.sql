-- Migration 15: leader leases (LeaderStore): one row per lease name, the worker that runs
-- the store's maintenance until expires_at (take_leadership.sql). A handful of rows,
-- read and written by primary key only.
CREATE TABLE rota_leaders (
    name       TEXT    PRIMARY KEY,
    owner      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

PRAGMA user_version = 15;
