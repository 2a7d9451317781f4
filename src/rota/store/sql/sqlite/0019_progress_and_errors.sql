-- Migration 19: what a running job reports, every failed attempt, and which worker ran
-- the last attempt.
--   progress  the handler's last `set_progress` (rota.core.progress: a JSON object), NULL
--             when none; cleared by a claim and a requeue.
--   errors    every failed attempt, oldest first, the last 20: a JSON array appended to by
--             the statements that retry, dead-letter, quarantine or expire a lease; NULL
--             for a job that never failed.
--   worker    the id of the worker that ran the last attempt (the lease owner's part
--             after `@`), set by the claim and kept after the job finishes.
-- Nullable columns without defaults: SQLite rewrites no rows to add them.
ALTER TABLE rota_jobs ADD COLUMN progress TEXT;
ALTER TABLE rota_jobs ADD COLUMN errors TEXT;
ALTER TABLE rota_jobs ADD COLUMN worker TEXT;

PRAGMA user_version = 19;
