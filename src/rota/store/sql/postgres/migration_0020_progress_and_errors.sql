-- Migration 20: what a running job reports, every failed attempt, and which worker ran
-- the last attempt.
-- {schema} is replaced by the store's schema, quoted as an identifier.
--   progress  the handler's last `set_progress` (rota.core.progress: done, total, message,
--             at), NULL when none; cleared by a claim and a requeue.
--   errors    every failed attempt, oldest first, the last 20: a JSON array appended to by
--             the statements that retry, dead-letter, quarantine or expire a lease; NULL
--             for a job that never failed.
--   worker    the id of the worker that ran the last attempt (the lease owner's part
--             after `@`), set by the claim and kept after the job finishes.
-- Nullable columns without defaults only change the catalog: no row is rewritten, and
-- the ALTER holds its lock for a moment only.
ALTER TABLE {schema}.jobs ADD COLUMN progress jsonb;
ALTER TABLE {schema}.jobs ADD COLUMN errors jsonb;
ALTER TABLE {schema}.jobs ADD COLUMN worker text;
