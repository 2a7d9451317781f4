-- Migration 10: the formatted traceback that goes with last_error when the handler raised
-- it (at most 16 KiB, its end kept: rota.core.outcomes.bound_traceback); NULL for a job
-- that never failed, or whose last error came from no exception. Written by the same
-- statements that write last_error, never by a claim or a success.
-- {schema} is replaced by the store's schema, quoted as an identifier.
-- A nullable column without a default only changes the catalog: no row is rewritten.
ALTER TABLE {schema}.jobs ADD COLUMN last_traceback text;
