-- Migration 1: the jobs table and the indexes the hot paths use.
-- Times are INTEGER microseconds since the Unix epoch, UTC.
-- AUTOINCREMENT: ids are never reused, and one INSERT batch under the write lock gets
-- consecutive ids (the store relies on this to return enqueue ids in order).
CREATE TABLE rota_jobs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    name             TEXT    NOT NULL,
    queue            TEXT    NOT NULL,
    state            TEXT    NOT NULL DEFAULT 'scheduled',
    attempt          INTEGER NOT NULL DEFAULT 0,
    due_at           INTEGER NOT NULL,
    args             TEXT    NOT NULL,
    kwargs           TEXT    NOT NULL,
    last_error       TEXT,
    created_at       INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_expires_at INTEGER
);

-- Claims read only this index; finished jobs are not in it, so they never slow a claim.
CREATE INDEX rota_jobs_claimable ON rota_jobs (queue, due_at, id) WHERE state = 'scheduled';

-- The lease sweeper reads only live leases, oldest expiry first.
CREATE INDEX rota_jobs_leased ON rota_jobs (lease_expires_at, id) WHERE state = 'leased';

-- The last statement of every migration records its number.
PRAGMA user_version = 1;
