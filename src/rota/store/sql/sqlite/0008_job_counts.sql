-- Migration 8: jobs per (Queue, state), kept as they change, so that queue_infos.sql and
-- count_jobs.sql (app.queues(), `rota queues`, the dashboard) read a few hundred rows
-- instead of scanning rota_jobs. Exact: every change is counted in the transaction that
-- makes it (SQLite has one writer, so a counter row costs no contention).
--
-- Who counts what: the hot statements count themselves, once per statement, in the store
-- (SQLiteStore: enqueue, claim, complete, a schedule's fire: a row trigger there costs a
-- few microseconds a job, measured at 30 % of a store-only drain). Every other change of
-- a job's state (retry, release, dead letter, quarantine, cancel, requeue, lease expiry)
-- and every deletion (purge, retention) is counted by the two triggers below, whose WHEN
-- leaves out the two hot changes (scheduled -> leased, leased -> succeeded) so those cost
-- nothing there.
CREATE TABLE rota_job_counts (
    queue TEXT    NOT NULL,
    state TEXT    NOT NULL,
    jobs  INTEGER NOT NULL,
    PRIMARY KEY (queue, state)
) WITHOUT ROWID;

CREATE TRIGGER rota_jobs_count_moved AFTER UPDATE OF state ON rota_jobs
WHEN OLD.state <> NEW.state
     AND NOT (OLD.state = 'scheduled' AND NEW.state = 'leased')
     AND NOT (OLD.state = 'leased' AND NEW.state = 'succeeded')
BEGIN
    UPDATE rota_job_counts SET jobs = jobs - 1 WHERE queue = OLD.queue AND state = OLD.state;
    INSERT INTO rota_job_counts (queue, state, jobs) VALUES (NEW.queue, NEW.state, 1)
    ON CONFLICT (queue, state) DO UPDATE SET jobs = jobs + 1;
END;

CREATE TRIGGER rota_jobs_count_deleted AFTER DELETE ON rota_jobs
BEGIN
    UPDATE rota_job_counts SET jobs = jobs - 1 WHERE queue = OLD.queue AND state = OLD.state;
END;

-- The backfill: one scan of an existing table, in the migration's transaction.
INSERT INTO rota_job_counts (queue, state, jobs)
SELECT queue, state, count(*) FROM rota_jobs GROUP BY queue, state;

PRAGMA user_version = 8;
