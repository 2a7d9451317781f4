-- Which of the Queues in the probe array have a due scheduled job and are not paused: the
-- probe of a batched claim (issue 13). A nested loop over the Queues probed: one index
-- probe each on jobs_claimable (queue, due_at, id), LIMIT 1 (the LATERAL keeps the planner
-- from hashing every due job instead), so its cost grows with the Queues probed, not with
-- their jobs. A Queue at its concurrency limit still counts (a claim finds it empty).
SELECT probed.queue
FROM unnest(%(probe)s::text[]) AS probed(queue)
CROSS JOIN LATERAL (
    SELECT jobs.id
    FROM {schema}.jobs
    WHERE jobs.queue = probed.queue
      AND jobs.state = 'scheduled'
      AND jobs.due_at <= %(now)s
    -- The index order: a seek to the Queue's first due job, never a table scan (with
    -- LIMIT 1 alone, the planner may bet on a table scan finding a row early, which
    -- walks the whole table for a Queue that has none).
    ORDER BY jobs.due_at, jobs.id
    LIMIT 1
) AS due
LEFT JOIN LATERAL (
    SELECT queue_settings.paused
    FROM {schema}.queue_settings
    WHERE queue_settings.queue = probed.queue
    OFFSET 0
) AS settings ON true
WHERE settings.paused IS NOT TRUE
