-- A family's rate changed: the buckets of its members that have no rate of their own start
-- full again, as a Queue's does when its own rate is set.
UPDATE {schema}.queue_settings
SET rate_empty_us = NULL, rate_empty_rem = NULL
WHERE rate_jobs IS NULL AND rate_empty_us IS NOT NULL
  AND starts_with(queue, %(prefix)s)
