-- The first statement of a claim over Queues with a limit (see claim.sql, part room): lock
-- the settings rows of those Queues, in name order so that two claimers never deadlock.
-- A second claimer of the same Queue waits here until the first commits. The rows come
-- back with their settings, rates and buckets (read under the lock: rota.core.rates).
-- `members`: the Queues asked whose limit or rate may be a family's
-- (ensure_member_settings.sql made their rows): their rows are locked too.
SELECT queue, paused, concurrency_limit, rate_jobs, rate_per_us, rate_burst, rate_empty_us,
       rate_empty_rem
FROM {schema}.queue_settings
WHERE queue = ANY (%(queues)s::text[])
  AND (concurrency_limit IS NOT NULL OR rate_jobs IS NOT NULL
       OR queue = ANY (%(members)s::text[]))
ORDER BY queue
FOR UPDATE
