-- enqueue.sql for a batch that has keys: a keyed job is inserted unless a live job of
-- the same name and key exists (committed, or committed while this statement waited for
-- it), or an earlier job of the batch holds them; such jobs return no row and the store
-- reads the live job's id with live_keys.sql. A NULL key never conflicts.
-- Ids are drawn in input order, so the rows sorted by id follow the input order.
WITH new_jobs AS (
    INSERT INTO {schema}.jobs (name, queue, due_at, args, kwargs, created_at, key,
                               trace_context, meta, expires_at)
    SELECT j.name, j.queue, j.due_at, j.args::json, j.kwargs::json, %(now)s, j.key,
           j.trace_context, j.meta::jsonb, j.expires_at
    FROM unnest(
        %(names)b::text[], %(queues)b::text[], %(due_ats)b::timestamptz[],
        %(args)b::text[], %(kwargs)b::text[], %(keys)s::text[], %(trace_contexts)s::text[],
        %(metas)s::text[], %(expires_ats)s::timestamptz[]
    ) WITH ORDINALITY AS j(name, queue, due_at, args, kwargs, key, trace_context, meta,
                           expires_at,
                           position)
    ORDER BY j.position
    ON CONFLICT (name, key) WHERE key IS NOT NULL AND state IN ('scheduled', 'leased')
    DO NOTHING
    RETURNING id, queue, name, key, due_at
),
hints AS (
    SELECT pg_notify(%(channel)s, touched.queue || ' ' || touched.position)
    FROM (SELECT queue, floor(extract(epoch FROM min(due_at)) * 1000000)::bigint AS position
          FROM new_jobs GROUP BY queue) AS touched
)
SELECT new_jobs.id, new_jobs.name, new_jobs.key
FROM new_jobs CROSS JOIN (SELECT count(*) FROM hints) AS sent
ORDER BY new_jobs.id
