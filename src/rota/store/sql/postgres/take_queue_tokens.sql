-- A claim took tokens from rated Queues' buckets (rota.core.rates.take): their new empty
-- instants, one array element per Queue. Runs in the claim's transaction, after
-- lock_queue_limits.sql locked these rows.
UPDATE {schema}.queue_settings AS settings
SET rate_empty_us = taken.empty_us, rate_empty_rem = taken.empty_rem
FROM unnest(%(queues)s::text[], %(empty_us)s::bigint[], %(empty_rem)s::bigint[])
    AS taken(queue, empty_us, empty_rem)
WHERE settings.queue = taken.queue
