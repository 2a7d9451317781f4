-- The Queues after %(after)s, in name order, whose names start with one of %(prefixes)s
-- and that hold a scheduled job due at %(now)s: the members of a policy's families with
-- work (rota.core.families), found without reading every member. A skip scan over
-- jobs_claimable (queue, due_at, id): one index seek per Queue holding a scheduled job,
-- never one per job nor per Queue without one. The walk compares names in the index's
-- own order and tests the prefixes by starts_with, so it holds under any collation;
-- LIMIT ends the walk early.
WITH RECURSIVE walk(queue) AS (
    (SELECT jobs.queue FROM {schema}.jobs
     WHERE jobs.state = 'scheduled' AND jobs.queue > %(after)s
     ORDER BY jobs.queue LIMIT 1)
    UNION ALL
    SELECT (SELECT jobs.queue FROM {schema}.jobs
            WHERE jobs.state = 'scheduled' AND jobs.queue > walk.queue
            ORDER BY jobs.queue LIMIT 1)
    FROM walk
    WHERE walk.queue IS NOT NULL
)
SELECT walk.queue
FROM walk
WHERE walk.queue IS NOT NULL
  AND EXISTS (SELECT 1 FROM unnest(%(prefixes)s::text[]) AS family(prefix)
              WHERE starts_with(walk.queue, family.prefix))
  AND EXISTS (SELECT 1 FROM {schema}.jobs
              WHERE jobs.queue = walk.queue AND jobs.state = 'scheduled'
                AND jobs.due_at <= %(now)s)
LIMIT %(limit)s;
