-- enqueue.sql with each job's trace context (the span the enqueue ran in); used only when
-- a job of the batch has one, so the common enqueue stays as it was.
-- Insert a batch of jobs in one statement (one round trip, all or none) and send one
-- wake-up hint per Queue touched. PostgreSQL delivers notifications at commit and folds
-- identical (channel, payload) pairs of one transaction into one.
-- Ids are drawn in input order (ORDER BY position), so sorted ids are the input order.
WITH new_jobs AS (
    INSERT INTO {schema}.jobs (name, queue, due_at, args, kwargs, created_at, trace_context,
                               expires_at)
    SELECT j.name, j.queue, j.due_at, j.args::json, j.kwargs::json, %(now)s, j.trace_context,
           j.expires_at
    FROM unnest(
        %(names)b::text[], %(queues)b::text[], %(due_ats)b::timestamptz[],
        %(args)b::text[], %(kwargs)b::text[], %(trace_contexts)s::text[],
        %(expires_ats)s::timestamptz[]
    ) WITH ORDINALITY AS j(name, queue, due_at, args, kwargs, trace_context, expires_at,
                           position)
    ORDER BY j.position
    RETURNING id, queue, due_at
),
hints AS (
    SELECT pg_notify(%(channel)s, touched.queue || ' ' || touched.position)
    FROM (SELECT queue, floor(extract(epoch FROM min(due_at)) * 1000000)::bigint AS position
          FROM new_jobs GROUP BY queue) AS touched
)
-- A SELECT in WITH runs only as far as it is read: count(*) reads every hint.
SELECT new_jobs.id
FROM new_jobs CROSS JOIN (SELECT count(*) FROM hints) AS sent
ORDER BY new_jobs.id
