-- Set (or with NULLs remove) a Queue's rate limit, its bucket full; keeps its pause and
-- limit. Wakes the Queue's workers in other processes (a NOTIFY on the enqueue channel)
-- unless it is paused: a new rate's full bucket, or no rate, may let them claim.
WITH changed AS (
    INSERT INTO {schema}.queue_settings AS settings (queue, rate_jobs, rate_per_us, rate_burst)
    VALUES (%(queue)s, %(jobs)s, %(per_us)s, %(burst)s)
    ON CONFLICT (queue) DO UPDATE SET
        rate_jobs = excluded.rate_jobs, rate_per_us = excluded.rate_per_us,
        rate_burst = excluded.rate_burst, rate_empty_us = NULL, rate_empty_rem = NULL
    RETURNING settings.queue, settings.paused, settings.concurrency_limit
),
hints AS (
    SELECT pg_notify(%(channel)s, changed.queue) FROM changed
    WHERE NOT changed.paused
)
SELECT changed.queue, changed.paused, changed.concurrency_limit
FROM changed CROSS JOIN (SELECT count(*) FROM hints) AS sent
