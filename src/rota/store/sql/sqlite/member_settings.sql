-- The own settings rows of the Queues a claim asks that a family with a setting holds:
-- their own settings win over the family's, and their bucket is theirs.
SELECT queue, paused, concurrency_limit, rate_jobs, rate_per_us, rate_burst, rate_empty_us,
       rate_empty_rem
FROM rota_queue_settings
WHERE queue IN (SELECT value FROM json_each(:queues));
