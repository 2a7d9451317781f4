-- The debounced jobs of a batch (each (name, key) once: the store keeps the last entry of
-- a key). A job is inserted, unless a job of the same name and key is scheduled and never
-- claimed (jobs_debounce_key): that job takes the new arguments and due time, the due
-- time capped at its first enqueue (created_at) + max_wait (NULL: no cap; LEAST ignores
-- a NULL). ON CONFLICT DO UPDATE inserts or updates atomically under READ COMMITTED: a
-- concurrent enqueuer of the key waits for this one and then updates its row, and a row
-- claimed meanwhile no longer conflicts, so it inserts. Rows are written in (name, key)
-- order, so two batches lock the same keys in one order and cannot deadlock.
-- Rows: (id, name, key) of every job given, inserted or updated.
WITH given AS (
    SELECT *
    FROM unnest(
        %(names)s::text[], %(queues)s::text[], %(due_ats)s::timestamptz[],
        %(args)s::text[], %(kwargs)s::text[], %(keys)s::text[], %(trace_contexts)s::text[],
        %(max_waits)s::interval[], %(metas)s::text[], %(expires_ats)s::timestamptz[]
    ) AS j(name, queue, due_at, args, kwargs, key, trace_context, max_wait, meta, expires_at)
),
written AS (
    INSERT INTO {schema}.jobs AS jobs (name, queue, due_at, args, kwargs, created_at,
                                       debounce_key, trace_context, meta, expires_at)
    SELECT g.name, g.queue, g.due_at, g.args::json, g.kwargs::json, %(now)s, g.key,
           g.trace_context, g.meta::jsonb, g.expires_at
    FROM given AS g
    ORDER BY g.name, g.key
    ON CONFLICT (name, debounce_key)
        WHERE debounce_key IS NOT NULL AND state = 'scheduled' AND started_at IS NULL
    DO UPDATE SET
        args = EXCLUDED.args,
        kwargs = EXCLUDED.kwargs,
        due_at = LEAST(EXCLUDED.due_at, jobs.created_at + (
            SELECT g.max_wait FROM given AS g
            WHERE g.name = EXCLUDED.name AND g.key = EXCLUDED.debounce_key))
    RETURNING jobs.id, jobs.queue, jobs.name, jobs.debounce_key, jobs.due_at
),
hints AS (
    SELECT pg_notify(%(channel)s, touched.queue || ' ' || touched.position)
    FROM (SELECT queue, floor(extract(epoch FROM min(due_at)) * 1000000)::bigint AS position
          FROM written GROUP BY queue) AS touched
)
SELECT written.id, written.name, written.debounce_key
FROM written CROSS JOIN (SELECT count(*) FROM hints) AS sent
