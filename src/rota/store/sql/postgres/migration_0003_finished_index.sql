-- Migration 3: the index retention and purge delete by.
-- {schema} is replaced by the store's schema, quoted as an identifier.
--
-- finished_at exists since migration 1 and every change into a finished state sets it.
-- Partial on finished_at IS NOT NULL: a row enters this index once, when it finishes
-- (complete, dead letter, quarantine, cancel); enqueue, claim, heartbeat, retry and
-- release never write to it. That is the whole drain cost of retention: one index entry
-- per finished job (docs/decisions/0038 has the measurement). Without it,
-- every purge batch would scan the table, and a purge with nothing to delete would read
-- every finished row.
-- (state, finished_at): one range scan per state, so `failed` retention never walks the
-- succeeded rows (or the other way round), whatever the two durations are.
-- Not CONCURRENTLY (migrations run in a transaction): on a large existing table the build
-- blocks writes to jobs while it runs; docs/retention.md says how to build it beforehand.
CREATE INDEX IF NOT EXISTS jobs_finished ON {schema}.jobs (state, finished_at)
    WHERE finished_at IS NOT NULL;
