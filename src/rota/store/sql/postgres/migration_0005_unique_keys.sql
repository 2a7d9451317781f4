-- Migration 5: unique jobs. {schema} is replaced by the store's schema.
-- A job may carry a key; while a job of the same name and key is live (scheduled or
-- leased), enqueueing another stores nothing (enqueue_keyed.sql's ON CONFLICT DO NOTHING,
-- then live_keys.sql answers the live job's id). The index is partial over keyed live
-- rows only: jobs without a key never enter it, so their enqueue, claim and outcomes pay
-- nothing for it. Adding a nullable column without a default rewrites no row.
ALTER TABLE {schema}.jobs ADD COLUMN key text;

CREATE UNIQUE INDEX jobs_live_key ON {schema}.jobs (name, key)
    WHERE key IS NOT NULL AND state IN ('scheduled', 'leased');
