-- Which of the Queues of a claim are paused or have a concurrency limit: asked after a
-- claim came back short of some Queue, so that the planner does not hold for empty a
-- Queue that a control held back (Claimed.controlled). Primary-key lookups.
SELECT queue
FROM {schema}.queue_settings
WHERE queue = ANY (%(queues)s::text[])
  AND (paused OR concurrency_limit IS NOT NULL)
