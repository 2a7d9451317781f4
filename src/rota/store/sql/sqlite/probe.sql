-- Which of the Queues in :queues (a JSON array of names) have a due scheduled job and are
-- not paused: the probe of a batched claim. One index seek per Queue on
-- rota_jobs_claimable (queue, due_at, id), so its cost grows with the Queues probed, not
-- with their jobs. A Queue at its concurrency limit still counts (a claim finds it empty).
SELECT probed.value
FROM json_each(:queues) AS probed
WHERE EXISTS (
    SELECT 1 FROM rota_jobs
    WHERE state = 'scheduled' AND queue = probed.value AND due_at <= :now
)
AND NOT EXISTS (
    SELECT 1 FROM rota_queue_settings AS settings
    WHERE settings.queue = probed.value AND settings.paused
)
AND NOT EXISTS (  -- nor a paused family holding it (migration 20's index)
    SELECT 1 FROM rota_queue_settings AS families
    WHERE families.queue GLOB '*[*]' AND families.paused
      AND substr(probed.value, 1, length(families.queue) - 1)
          = substr(families.queue, 1, length(families.queue) - 1)
);
