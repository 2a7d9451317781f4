-- Which Queues have a due scheduled job and are not paused, found by walking the Queues
-- that have scheduled jobs at all: a probe of many Queues (a survey or recheck
-- of thousands of tenants, most of them empty). One index seek per Queue with scheduled
-- jobs (the next Queue name on rota_jobs_claimable, then its due check), where probe.sql
-- costs one per Queue probed; never a walk over the jobs.
-- The walk stops after :cap rows (the caller: an eighth of the Queues it probes). Each
-- row is (queue, due); the last row of a walk that reached the end has a NULL queue, so
-- a caller that sees none stopped short and must probe by name instead (probe.sql).
WITH RECURSIVE scheduled(queue) AS (
    SELECT (SELECT min(queue) FROM rota_jobs WHERE state = 'scheduled')
    UNION ALL
    SELECT (
        SELECT min(queue) FROM rota_jobs
        WHERE state = 'scheduled' AND queue > scheduled.queue
    )
    FROM scheduled
    WHERE scheduled.queue IS NOT NULL
    LIMIT :cap
)
SELECT scheduled.queue,
       EXISTS (
           SELECT 1 FROM rota_jobs
           WHERE state = 'scheduled' AND queue = scheduled.queue AND due_at <= :now
       )
       AND NOT EXISTS (
           SELECT 1 FROM rota_queue_settings AS settings
           WHERE settings.queue = scheduled.queue AND settings.paused
       )
       AND NOT EXISTS (  -- nor a paused family holding it (migration 20's index)
           SELECT 1 FROM rota_queue_settings AS families
           WHERE families.queue GLOB '*[*]' AND families.paused
             AND substr(scheduled.queue, 1, length(families.queue) - 1)
                 = substr(families.queue, 1, length(families.queue) - 1)
       )
FROM scheduled;
