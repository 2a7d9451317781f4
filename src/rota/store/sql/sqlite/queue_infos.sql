-- What `queue_infos` needs, in one statement (one consistent read): a row per (Queue,
-- state) with its count (kept by migration 8), and of its scheduled jobs the number due
-- at :now and the oldest due time; then a row per Queue setting, with state NULL.
-- The due count walks the partial index rota_jobs_claimable on the smaller side: the jobs
-- not due yet, up to 1,000, subtracted from the count; only a Queue with more than 1,000
-- jobs scheduled ahead has its due jobs counted one by one instead.
SELECT queue, state, jobs,
       CASE WHEN state = 'scheduled' THEN
           CASE WHEN later < 1000 THEN jobs - later
                ELSE (SELECT count(*) FROM rota_jobs AS due
                      WHERE due.state = 'scheduled' AND due.queue = counted.queue
                        AND due.due_at <= :now)
           END
       END,
       CASE WHEN state = 'scheduled' THEN
           (SELECT min(due.due_at) FROM rota_jobs AS due
            WHERE due.state = 'scheduled' AND due.queue = counted.queue AND due.due_at <= :now)
       END,
       NULL, NULL
FROM (
    SELECT queue, state, jobs,
           CASE WHEN state = 'scheduled' THEN
               (SELECT count(*) FROM (
                    SELECT 1 FROM rota_jobs AS ahead
                    WHERE ahead.state = 'scheduled' AND ahead.queue = rota_job_counts.queue
                      AND ahead.due_at > :now
                    LIMIT 1000))
           END AS later
    FROM rota_job_counts
    WHERE jobs > 0
) AS counted
UNION ALL
SELECT queue, NULL, 0, 0, NULL, paused, concurrency_limit
FROM rota_queue_settings;
