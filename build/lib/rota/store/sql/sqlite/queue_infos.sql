-- What `queue_infos` needs, in one statement (one consistent read): a row per (Queue,
-- state) with its count, and of its scheduled jobs the number due at :now and the oldest
-- due time; then a row per Queue setting, with state NULL.
SELECT queue, state, count(*),
       sum(state = 'scheduled' AND due_at <= :now),
       min(CASE WHEN state = 'scheduled' AND due_at <= :now THEN due_at END),
       NULL, NULL
FROM rota_jobs
GROUP BY queue, state
UNION ALL
SELECT queue, NULL, 0, 0, NULL, paused, concurrency_limit
FROM rota_queue_settings;
