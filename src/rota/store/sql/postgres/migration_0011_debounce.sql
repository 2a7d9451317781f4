-- Migration 11: debounce. {schema} is replaced by the store's schema.
-- A debounced job keeps its key in debounce_key (its key column stays NULL, so
-- jobs_live_key, the unique keys' "one live job" rule, never sees it). Its rule is one job
-- per (name, key) that is scheduled and never claimed: claims set started_at and nothing
-- clears it, so a claimed job leaves this index for good (a retry, a lease expiry or a
-- hand-back puts it back to scheduled without a conflict), and the next enqueue of the key
-- makes a new job. enqueue_debounced.sql's ON CONFLICT DO UPDATE on this index is what
-- makes concurrent enqueuers end in one job. Keyless and unique-key jobs never enter it,
-- so their writes pay nothing for it; adding a nullable column rewrites no row.
ALTER TABLE {schema}.jobs ADD COLUMN debounce_key text;

CREATE UNIQUE INDEX jobs_debounce_key ON {schema}.jobs (name, debounce_key)
    WHERE debounce_key IS NOT NULL AND state = 'scheduled' AND started_at IS NULL;
