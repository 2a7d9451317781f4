-- Migration 12: Worker Group policies set while workers run (App.set_group_policy), one
-- row per group, read by every worker running it. queues and weights are JSON lists
-- (weights NULL for Strict): one row however many Queues. kind NULL: cleared, the group
-- runs the policy in its code again; the row stays so that its version goes on moving.
-- version moves on with every change, so a worker that knows it reads the row only
-- when it changed (group_policy_versions.sql).
CREATE TABLE rota_group_policies (
    name       TEXT    PRIMARY KEY,
    kind       TEXT,
    queues     TEXT,
    weights    TEXT,
    version    INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

PRAGMA user_version = 12;
