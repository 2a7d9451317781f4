-- Migration 8: jobs per (Queue, state), kept as they change, so that `queue_infos` and
-- `count_jobs` (app.queues(), `rota queues`, the dashboard) read a few hundred rows instead
-- of scanning the jobs table. {schema} is replaced by the store's schema, quoted.
--
-- Exact, and written without a lock any claimer waits for: a counter row per Queue updated
-- by every claim would make concurrent claimers of one Queue queue up on its row lock until
-- they commit. Instead three statement-level triggers append one row per (Queue, state)
-- that a statement changed, with the net change (a claim of 20 from one Queue: two rows,
-- scheduled -20 and leased +20), to job_count_deltas, an insert-only table without index.
-- Every write of jobs is counted, whichever statement makes it (enqueue, claim, outcomes,
-- cancel, requeue, purge, lease expiry, and statements of later versions).
-- The count of a (Queue, state) is job_counts plus its delta rows, read in one statement
-- (the view job_counts_now), so it is exact at that statement's snapshot.
-- fold_job_counts() moves the deltas into job_counts under a transaction-scoped advisory
-- lock (one fold at a time; the others skip it); the triggers call it about once in a
-- thousand statements, so the delta rows stay few whether anyone reads or not.
CREATE TABLE {schema}.job_counts (
    queue text   NOT NULL,
    state text   NOT NULL,
    jobs  bigint NOT NULL,
    PRIMARY KEY (queue, state)
);

CREATE TABLE {schema}.job_count_deltas (
    queue text   NOT NULL,
    state text   NOT NULL,
    jobs  bigint NOT NULL
);

-- The counts as a read sees them: folded plus not folded yet, in one statement (one
-- snapshot), so exact at it. Pairs with no job are left out.
CREATE VIEW {schema}.job_counts_now AS
SELECT queue, state, sum(jobs)::bigint AS jobs
FROM (
    SELECT queue, state, jobs FROM {schema}.job_counts
    UNION ALL
    SELECT queue, state, jobs FROM {schema}.job_count_deltas
) AS parts
GROUP BY queue, state
HAVING sum(jobs) > 0;

CREATE FUNCTION {schema}.fold_job_counts() RETURNS void LANGUAGE sql AS $$
    WITH moved AS (
        DELETE FROM {schema}.job_count_deltas
        WHERE pg_try_advisory_xact_lock(hashtext('rota.job_counts:' || '{schema}'))
        RETURNING queue, state, jobs
    )
    INSERT INTO {schema}.job_counts AS counts (queue, state, jobs)
    SELECT queue, state, sum(jobs) FROM moved GROUP BY queue, state ORDER BY queue, state
    ON CONFLICT (queue, state) DO UPDATE SET jobs = counts.jobs + excluded.jobs
$$;

CREATE FUNCTION {schema}.count_inserted_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.job_count_deltas (queue, state, jobs)
    SELECT queue, state, count(*) FROM inserted_jobs GROUP BY queue, state;
    IF random() < 0.001 THEN
        PERFORM {schema}.fold_job_counts();
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION {schema}.count_updated_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- One aggregation over both sides (measured: 34 us a claim of 20, against 47 us
    -- grouping each side first); a heartbeat (leased -> leased) nets to nothing.
    INSERT INTO {schema}.job_count_deltas (queue, state, jobs)
    SELECT queue, state, sum(jobs)
    FROM (
        SELECT queue, state, -1 AS jobs FROM old_jobs
        UNION ALL
        SELECT queue, state, 1 FROM new_jobs
    ) AS moves
    GROUP BY queue, state
    HAVING sum(jobs) <> 0;
    IF random() < 0.001 THEN
        PERFORM {schema}.fold_job_counts();
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION {schema}.count_deleted_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.job_count_deltas (queue, state, jobs)
    SELECT queue, state, -count(*) FROM deleted_jobs GROUP BY queue, state;
    RETURN NULL;
END
$$;

-- No write of jobs between the triggers' start and the backfill below: both see the same
-- rows (the lock is held until the migration commits).
LOCK TABLE {schema}.jobs IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER jobs_count_inserted AFTER INSERT ON {schema}.jobs
    REFERENCING NEW TABLE AS inserted_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.count_inserted_jobs();
CREATE TRIGGER jobs_count_updated AFTER UPDATE ON {schema}.jobs
    REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.count_updated_jobs();
CREATE TRIGGER jobs_count_deleted AFTER DELETE ON {schema}.jobs
    REFERENCING OLD TABLE AS deleted_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.count_deleted_jobs();

-- The backfill: one scan of an existing table (docs/operations.md gives its time on ten
-- million rows).
INSERT INTO {schema}.job_counts (queue, state, jobs)
SELECT queue, state, count(*) FROM {schema}.jobs GROUP BY queue, state;
