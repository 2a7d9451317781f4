-- What `queue_infos` needs, in one statement (one snapshot): a row per (Queue, state) with
-- its count (job_counts plus the deltas not folded yet, migration 8), and of its scheduled
-- jobs the number due at `now` and the oldest due time; then a row per Queue setting,
-- with state NULL.
-- The due count walks the partial index jobs_claimable on the smaller side: the jobs not
-- due yet, up to 1,000, subtracted from the count; only a Queue with more than 1,000 jobs
-- scheduled ahead has its due jobs counted one by one instead.
WITH counted AS (
    SELECT queue, state, sum(jobs)::bigint AS jobs
    FROM (
        SELECT queue, state, jobs FROM {schema}.job_counts
        UNION ALL
        SELECT queue, state, jobs FROM {schema}.job_count_deltas
    ) AS parts
    GROUP BY queue, state
    HAVING sum(jobs) > 0
)
SELECT counted.queue, counted.state, counted.jobs, due.jobs, due.oldest,
       NULL::boolean, NULL::integer
FROM counted
LEFT JOIN LATERAL (
    SELECT CASE WHEN ahead.jobs < 1000 THEN counted.jobs - ahead.jobs
                ELSE (SELECT count(*) FROM {schema}.jobs
                      WHERE jobs.queue = counted.queue AND jobs.state = 'scheduled'
                        AND jobs.due_at <= %(now)s)
           END AS jobs,
           (SELECT jobs.due_at FROM {schema}.jobs
            WHERE jobs.queue = counted.queue AND jobs.state = 'scheduled'
              AND jobs.due_at <= %(now)s
            ORDER BY jobs.due_at LIMIT 1) AS oldest
    FROM (
        SELECT count(*) AS jobs
        FROM (
            SELECT 1 FROM {schema}.jobs
            WHERE jobs.queue = counted.queue AND jobs.state = 'scheduled'
              AND jobs.due_at > %(now)s
            -- In index order: without it the generic plan may scan the table (expecting
            -- 1,000 matches soon), which finds none on a table of due and finished jobs.
            ORDER BY jobs.due_at
            LIMIT 1000
        ) AS later
    ) AS ahead
) AS due ON counted.state = 'scheduled'
UNION ALL
SELECT queue, NULL, 0, 0, NULL, paused, concurrency_limit
FROM {schema}.queue_settings
