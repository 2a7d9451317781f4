-- Migration 4: Queue settings (paused, concurrency limit), beside the jobs.
-- A Queue without a row has the defaults: not paused, no limit. A row may name a Queue
-- that has no jobs (settings can precede jobs). Every claim reads this table; there is
-- no cache anywhere, so a change binds every worker at its next claim.
CREATE TABLE rota_queue_settings (
    queue             TEXT    PRIMARY KEY,
    paused            INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    concurrency_limit INTEGER CHECK (concurrency_limit >= 0)
) WITHOUT ROWID;

PRAGMA user_version = 4;
