-- Migration 10: the formatted traceback that goes with last_error when the handler raised
-- it (at most 16 KiB, its end kept: rota.core.outcomes.bound_traceback); NULL for a job
-- that never failed, or whose last error came from no exception. Written by the same
-- statements that write last_error, never by a claim or a success. A nullable column
-- without a default: SQLite rewrites no rows to add it.
ALTER TABLE rota_jobs ADD COLUMN last_traceback TEXT;

PRAGMA user_version = 10;
