-- What `queue_infos` needs, in one statement (one consistent read): a row per (Queue,
-- state) with its count (kept by migration 8), and of its scheduled jobs the number due
-- at :now and the oldest due time; then a row per Queue setting, with state NULL (and
-- a rated Queue's bucket, whose tokens at :now the store counts: rota.core.rates).
--
-- `due` is exact, found on the partial index rota_jobs_claimable, and walks the smaller
-- side of :now where it can: the jobs scheduled ahead (not due yet), up to 1,000,
-- subtracted from the Queue's scheduled count; else the due ones, up to 1,000; only a
-- Queue with more than 1,000 of each has its jobs scheduled ahead counted in full (a due
-- backlog can grow without bound when workers fall behind; jobs scheduled ahead are what
-- producers chose).
SELECT queue, state, jobs,
       CASE WHEN state = 'scheduled' THEN
           CASE
               WHEN ahead < 1000 THEN jobs - ahead
               WHEN (SELECT count(*) FROM (
                         SELECT 1 FROM rota_jobs AS due
                         WHERE due.state = 'scheduled' AND due.queue = counted.queue
                           AND due.due_at <= :now
                         LIMIT 1000)) < 1000
                   THEN (SELECT count(*) FROM rota_jobs AS due
                         WHERE due.state = 'scheduled' AND due.queue = counted.queue
                           AND due.due_at <= :now)
               ELSE jobs - (SELECT count(*) FROM rota_jobs AS later
                            WHERE later.state = 'scheduled' AND later.queue = counted.queue
                              AND later.due_at > :now)
           END
       END,
       CASE WHEN state = 'scheduled' THEN
           (SELECT min(due.due_at) FROM rota_jobs AS due
            WHERE due.state = 'scheduled' AND due.queue = counted.queue AND due.due_at <= :now)
       END,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM (
    SELECT queue, state, jobs,
           CASE WHEN state = 'scheduled' THEN
               (SELECT count(*) FROM (
                    SELECT 1 FROM rota_jobs AS ahead
                    WHERE ahead.state = 'scheduled' AND ahead.queue = rota_job_counts.queue
                      AND ahead.due_at > :now
                    LIMIT 1000))
           END AS ahead
    FROM rota_job_counts
    WHERE jobs > 0
) AS counted
UNION ALL
SELECT queue, NULL, 0, 0, NULL, paused, concurrency_limit, rate_jobs, rate_per_us, rate_burst,
       rate_empty_us, rate_empty_rem
FROM rota_queue_settings;
