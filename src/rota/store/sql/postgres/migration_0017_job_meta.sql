-- Migration 17: a job's meta (`configure(meta=...)`, rota.core.meta): a JSON object of at
-- most 4 KiB, NULL for a job without any. `find_jobs(meta=...)` matches it with
-- `meta @> filter` (then each key's value compared for equality), which the GIN index
-- below answers: jsonb_path_ops indexes each path-and-value pair as one hash, the
-- smallest GIN opclass that serves @>. Partial: jobs without meta cost the index nothing.
-- {schema} is replaced by the store's schema, quoted as an identifier.
-- A nullable column without a default only changes the catalog: no row is rewritten.
-- The index is built inside the migration's transaction (CREATE INDEX CONCURRENTLY cannot
-- run in one), so it holds writes to the jobs table while it builds: every existing row
-- has a NULL meta, so the build reads the table once and indexes nothing. To take no
-- write lock on a large table, add the column and create the index CONCURRENTLY by hand
-- first, under these names (docs/postgres.md, Migrations): the IF NOT EXISTS skip them.
ALTER TABLE {schema}.jobs ADD COLUMN IF NOT EXISTS meta jsonb;
CREATE INDEX IF NOT EXISTS jobs_meta ON {schema}.jobs USING gin (meta jsonb_path_ops)
    WHERE meta IS NOT NULL;
