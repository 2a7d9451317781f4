-- Migration 5: unique jobs. A job may carry a key; while a job of the same name and key
-- is live (scheduled or leased), enqueueing another stores nothing (enqueue_keyed.sql's
-- ON CONFLICT ... DO NOTHING answers the live job's id instead).
-- The index is partial over keyed live rows only: jobs without a key never enter it, so
-- their enqueue, claim and outcomes pay nothing for it; a keyed job leaves it when it
-- finishes, which frees the key.
ALTER TABLE rota_jobs ADD COLUMN key TEXT;

CREATE UNIQUE INDEX rota_jobs_live_key ON rota_jobs (name, key)
    WHERE key IS NOT NULL AND state IN ('scheduled', 'leased');

PRAGMA user_version = 5;
