-- The Queues after :after, in name order, whose names start with one of :prefixes (a JSON
-- array) and that hold a scheduled job due at :now: the members of a policy's families
-- with work (rota.core.families), found without reading every member. A skip scan over
-- rota_jobs_claimable (queue, due_at, id): one index seek per Queue holding a scheduled
-- job, never one per job nor per Queue without one; LIMIT ends the walk early.
WITH RECURSIVE walk(queue) AS (
    SELECT (SELECT queue FROM rota_jobs
            WHERE state = 'scheduled' AND queue > :after
            ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT queue FROM rota_jobs
            WHERE state = 'scheduled' AND queue > walk.queue
            ORDER BY queue LIMIT 1)
    FROM walk
    WHERE walk.queue IS NOT NULL
)
SELECT walk.queue
FROM walk
WHERE walk.queue IS NOT NULL
  AND EXISTS (SELECT 1 FROM json_each(:prefixes) AS family
              WHERE substr(walk.queue, 1, length(family.value)) = family.value)
  AND EXISTS (SELECT 1 FROM rota_jobs
              WHERE queue = walk.queue AND state = 'scheduled' AND due_at <= :now)
LIMIT :limit;
