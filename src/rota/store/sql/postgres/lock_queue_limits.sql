-- The first statement of a claim over Queues with a limit (see claim.sql, part room): lock
-- the settings rows of those Queues, in name order so that two claimers never deadlock.
-- A second claimer of the same Queue waits here until the first commits. The rated
-- Queues' rates and buckets come back (read under the lock: rota.core.rates).
SELECT queue, rate_jobs, rate_per_us, rate_burst, rate_empty_us, rate_empty_rem
FROM {schema}.queue_settings
WHERE queue = ANY (%(queues)s::text[])
  AND (concurrency_limit IS NOT NULL OR rate_jobs IS NOT NULL)
ORDER BY queue
FOR UPDATE
