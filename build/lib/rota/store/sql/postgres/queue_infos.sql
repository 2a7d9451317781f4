-- What `queue_infos` needs, in one statement (one snapshot): a row per (Queue, state) with
-- its count, and of its scheduled jobs the number due at `now` and the oldest due time;
-- then a row per Queue setting, with state NULL. An admin read: it scans the table.
SELECT queue, state, count(*)::integer,
       (count(*) FILTER (WHERE state = 'scheduled' AND due_at <= %(now)s))::integer,
       min(due_at) FILTER (WHERE state = 'scheduled' AND due_at <= %(now)s),
       NULL::boolean, NULL::integer
FROM {schema}.jobs
GROUP BY queue, state
UNION ALL
SELECT queue, NULL, 0, 0, NULL, paused, concurrency_limit
FROM {schema}.queue_settings
