-- Migration 16: a job's meta (`configure(meta=...)`, rota.core.meta): JSON object text of
-- at most 4 KiB, NULL for a job without any. `find_jobs(meta=...)` compares it in the
-- store's process (rota_meta_matches, the rule of rota.core.meta): no index, a scan of
-- the jobs the other filters leave. A nullable column without a default: SQLite rewrites
-- no rows to add it.
ALTER TABLE rota_jobs ADD COLUMN meta TEXT;

PRAGMA user_version = 16;
