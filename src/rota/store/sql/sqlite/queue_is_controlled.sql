-- Whether a Queue is paused or has a concurrency limit or a rate: asked after a claim came back
-- short of a Queue, so that the planner does not hold for empty a Queue that a control
-- held back (Claimed.controlled). A primary-key lookup.
SELECT 1
FROM rota_queue_settings
WHERE queue = :queue
  AND (paused OR concurrency_limit IS NOT NULL OR rate_jobs IS NOT NULL);
