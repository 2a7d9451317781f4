-- Migration 3: when a job finished, and the index retention deletes by.
-- finished_at: INTEGER microseconds since the Unix epoch, UTC; NULL until the job reaches
-- a finished state (succeeded, dead_lettered, quarantined, cancelled).
ALTER TABLE rota_jobs ADD COLUMN finished_at INTEGER;

-- Jobs that finished before this migration never recorded when: their due time (or
-- creation, if later) is the best bound known (a job runs at or after it is due), so
-- retention can still delete them rather than keep them forever.
UPDATE rota_jobs SET finished_at = max(created_at, due_at)
WHERE state IN ('succeeded', 'dead_lettered', 'quarantined', 'cancelled');

-- Retention and purge walk this index, per state, oldest finish first: a purge finds its
-- batch without scanning the table, and a purge with nothing to delete costs one index
-- probe. Partial: a row enters it once, when it finishes (one index write per job); claims
-- and the other outcomes never touch it.
CREATE INDEX rota_jobs_finished ON rota_jobs (state, finished_at) WHERE finished_at IS NOT NULL;

PRAGMA user_version = 3;
