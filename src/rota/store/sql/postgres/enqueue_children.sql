-- enqueue.sql for a batch that holds jobs with parents, after lock_parents.sql locked the
-- parents: each job is inserted in the state rota.core.workflows.at_enqueue gave it
-- (waiting, scheduled, or cancelled at `now` with its error), with its parents (the
-- slice of parent_ids from parent_starts, parent_counts long; none: NULL), what it waits
-- for and how many it waits for; then one edge per (parent, child), pending while that
-- parent has not finished (`unfinished`); the parents are marked has_children so their
-- finish settles their children (the trigger of migration 14). One hint per Queue that
-- got a scheduled job. Ids are drawn in input order.
WITH new_jobs AS (
    INSERT INTO {schema}.jobs (name, queue, due_at, args, kwargs, created_at, trace_context,
                               state, finished_at, last_error, parents, after_outcome,
                               waiting_for, meta, expires_at)
    SELECT j.name, j.queue, j.due_at, j.args::json, j.kwargs::json, %(now)s, j.trace_context,
           j.state, CASE WHEN j.state = 'cancelled' THEN %(now)s::timestamptz END, j.error,
           CASE WHEN j.parent_count > 0
                THEN (%(parent_ids)s::bigint[])[j.parent_start:j.parent_start + j.parent_count - 1]
           END,
           CASE WHEN j.parent_count > 0 THEN j.after_outcome END,
           CASE WHEN j.parent_count > 0 THEN j.waiting_for END, j.meta::jsonb, j.expires_at
    FROM unnest(
        %(names)b::text[], %(queues)b::text[], %(due_ats)b::timestamptz[],
        %(args)b::text[], %(kwargs)b::text[], %(trace_contexts)s::text[],
        %(states)s::text[], %(errors)s::text[], %(parent_starts)s::int[],
        %(parent_counts)s::int[], %(after_outcomes)s::text[], %(waiting_fors)s::int[],
        %(metas)s::text[], %(expires_ats)s::timestamptz[]
    ) WITH ORDINALITY AS j(name, queue, due_at, args, kwargs, trace_context, state, error,
                           parent_start, parent_count, after_outcome, waiting_for, meta,
                           expires_at, position)
    ORDER BY j.position
    RETURNING id, queue, state, parents, due_at
),
edges AS (
    INSERT INTO {schema}.job_edges (parent_id, child_id, pending)
    SELECT parent.id, new_jobs.id,
           parent.id IN (SELECT unnest(%(unfinished)s::bigint[])) -- hashed: one probe an edge
    FROM new_jobs CROSS JOIN LATERAL unnest(new_jobs.parents) AS parent(id)
    WHERE new_jobs.parents IS NOT NULL
),
marked AS (
    UPDATE {schema}.jobs
    SET has_children = true
    WHERE jobs.id = ANY (%(parent_ids)s::bigint[]) AND NOT jobs.has_children
),
hints AS (
    SELECT pg_notify(%(channel)s, touched.queue || ' ' || touched.position)
    FROM (SELECT queue, floor(extract(epoch FROM min(due_at)) * 1000000)::bigint AS position
          FROM new_jobs WHERE state = 'scheduled' GROUP BY queue) AS touched
)
SELECT new_jobs.id
FROM new_jobs CROSS JOIN (SELECT count(*) FROM hints) AS sent
ORDER BY new_jobs.id
