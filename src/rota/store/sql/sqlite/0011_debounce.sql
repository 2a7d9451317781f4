-- Migration 11: debounce. A debounced job keeps its key in debounce_key (its key column
-- stays NULL, so rota_jobs_live_key, the unique keys' "one live job" rule, never sees it).
-- Its rule is one job per (name, key) that is scheduled and never claimed: claims set
-- started_at and nothing clears it, so a claimed job leaves this index for good (a retry,
-- a lease expiry or a hand-back puts it back to scheduled without a conflict), and the
-- next enqueue of the key makes a new job. Keyless and unique-key jobs never enter it.
ALTER TABLE rota_jobs ADD COLUMN debounce_key TEXT;

CREATE UNIQUE INDEX rota_jobs_debounce_key ON rota_jobs (name, debounce_key)
    WHERE debounce_key IS NOT NULL AND state = 'scheduled' AND started_at IS NULL;

PRAGMA user_version = 11;
