-- What `queue_infos` needs, in one statement (one snapshot): a row per (Queue, state) with
-- its count (job_counts_now, migration 8), and of its scheduled
-- jobs the number due at `now` and the oldest due time; then a row per Queue setting,
-- with state NULL (and a rated Queue's bucket, whose tokens at `now` the store counts:
-- rota.core.rates).
--
-- `due` is exact, found on the partial index jobs_claimable, and walks the smaller side
-- of `now` where it can: the jobs scheduled ahead (not due yet), up to 1,000, subtracted
-- from the Queue's scheduled count; else the due ones, up to 1,000; only a Queue with more
-- than 1,000 of each has its jobs scheduled ahead counted in full (a due backlog can grow
-- without bound when workers fall behind; jobs scheduled ahead are what producers chose).
-- Every walk is in index order (ORDER BY due_at), so a generic plan never scans the table.
-- The walks run for the scheduled rows only: as a LATERAL join over every (Queue, state)
-- row, the state test became a join filter applied after each walk, which doubled the
-- statement's time (10,000,000 rows: ~58 ms, of which half for finished states).
WITH counted AS (
    SELECT queue, state, jobs FROM {schema}.job_counts_now
)
SELECT listed.queue, listed.state, listed.jobs, due.jobs, due.oldest,
       NULL::boolean, NULL::integer, NULL::integer, NULL::bigint, NULL::integer,
       NULL::bigint, NULL::bigint
FROM counted AS listed
LEFT JOIN (
    SELECT counted.queue,
           CASE
               WHEN ahead.jobs < 1000 THEN counted.jobs - ahead.jobs
               ELSE (
                   SELECT CASE
                              WHEN due_now.jobs < 1000 THEN due_now.jobs
                              ELSE counted.jobs - (
                                  SELECT count(*) FROM (
                                      SELECT 1 FROM {schema}.jobs
                                      WHERE jobs.queue = counted.queue
                                        AND jobs.state = 'scheduled'
                                        AND jobs.due_at > %(now)s
                                      ORDER BY jobs.due_at
                                  ) AS every_ahead)
                          END
                   FROM (
                       SELECT count(*) AS jobs FROM (
                           SELECT 1 FROM {schema}.jobs
                           WHERE jobs.queue = counted.queue AND jobs.state = 'scheduled'
                             AND jobs.due_at <= %(now)s
                           ORDER BY jobs.due_at
                           LIMIT 1000
                       ) AS first_due
                   ) AS due_now)
           END AS jobs,
           (SELECT jobs.due_at FROM {schema}.jobs
            WHERE jobs.queue = counted.queue AND jobs.state = 'scheduled'
              AND jobs.due_at <= %(now)s
            ORDER BY jobs.due_at LIMIT 1) AS oldest
    FROM counted
    CROSS JOIN LATERAL (
        SELECT count(*) AS jobs FROM (
            SELECT 1 FROM {schema}.jobs
            WHERE jobs.queue = counted.queue AND jobs.state = 'scheduled'
              AND jobs.due_at > %(now)s
            ORDER BY jobs.due_at
            LIMIT 1000
        ) AS first_ahead
    ) AS ahead
    WHERE counted.state = 'scheduled'
) AS due ON due.queue = listed.queue AND listed.state = 'scheduled'
UNION ALL
SELECT queue, NULL, 0, 0, NULL, paused, concurrency_limit, rate_jobs, rate_per_us, rate_burst,
       rate_empty_us, rate_empty_rem
FROM {schema}.queue_settings
