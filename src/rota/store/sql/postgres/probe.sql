-- For each Queue in the probe array: whether it has a due scheduled job and is not paused
-- (`due`), and whether it is paused or has a concurrency limit or a rate (`controlled`). The probe
-- of a batched claim, sent alone or pipelined right behind the claim (one
-- network round trip for both; it runs after the claim, so it sees what the claim left).
-- A nested loop over the Queues: one index seek each on jobs_claimable (queue, due_at,
-- id), LIMIT 1 in the index order (with LIMIT 1 alone the planner may bet on a table scan
-- finding a row early, which walks the whole table for a Queue that has none), and a
-- primary-key lookup of its settings; so its cost grows with the Queues probed, never
-- with their jobs. A Queue at its concurrency limit still counts as due.
SELECT probed.queue,
       due.id IS NOT NULL AND settings.paused IS NOT TRUE AND NOT family.paused AS due,
       settings.paused IS TRUE OR settings.concurrency_limit IS NOT NULL
           OR settings.rate_jobs IS NOT NULL OR family.controlled AS controlled
FROM unnest(%(probe)s::text[], %(probe_floor_dues)s::timestamptz[],
            %(probe_floor_ids)s::bigint[]) AS probed(queue, floor_due, floor_id)
LEFT JOIN LATERAL (
    SELECT jobs.id
    FROM {schema}.jobs
    WHERE jobs.queue = probed.queue
      AND jobs.state = 'scheduled'
      AND jobs.due_at <= %(now)s
      AND (jobs.due_at, jobs.id) >= (probed.floor_due, probed.floor_id)
    ORDER BY jobs.due_at, jobs.id
    LIMIT 1
) AS due ON true
LEFT JOIN LATERAL (
    SELECT queue_settings.paused, queue_settings.concurrency_limit, queue_settings.rate_jobs
    FROM {schema}.queue_settings
    WHERE queue_settings.queue = probed.queue
    OFFSET 0
) AS settings ON true
-- The families with a setting that hold it (migration 21).
LEFT JOIN LATERAL (
    SELECT coalesce(bool_or(held.paused), false) AS paused, count(*) > 0 AS controlled
    FROM {schema}.family_controls(ARRAY[probed.queue]) AS held
) AS family ON true
