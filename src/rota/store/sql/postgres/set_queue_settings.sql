-- Change one of a Queue's settings, keeping the others; its settings after. %(setting)s
-- says which: 'paused' (%(paused)s), 'limit' (%(limit)s, NULL for none) or 'rate'
-- (%(jobs)s, %(per_us)s, %(burst)s, NULLs for none; its bucket starts full). A Queue
-- without a row gets one with the defaults for the others (not paused, no limit, no rate).
-- The change wakes the Queue's workers in other processes at once (a NOTIFY on the
-- enqueue channel) unless the Queue is paused: a resume, a higher limit or none, a new
-- rate's full bucket or none may let them claim.
WITH changed AS (
    INSERT INTO {schema}.queue_settings AS settings
        (queue, paused, concurrency_limit, rate_jobs, rate_per_us, rate_burst)
    VALUES (%(queue)s, coalesce(%(paused)s::boolean, false), %(limit)s, %(jobs)s,
            %(per_us)s, %(burst)s)
    ON CONFLICT (queue) DO UPDATE SET
        paused = CASE %(setting)s::text WHEN 'paused' THEN excluded.paused
                 ELSE settings.paused END,
        concurrency_limit = CASE %(setting)s::text WHEN 'limit'
                            THEN excluded.concurrency_limit
                            ELSE settings.concurrency_limit END,
        rate_jobs = CASE %(setting)s::text WHEN 'rate' THEN excluded.rate_jobs
                    ELSE settings.rate_jobs END,
        rate_per_us = CASE %(setting)s::text WHEN 'rate' THEN excluded.rate_per_us
                      ELSE settings.rate_per_us END,
        rate_burst = CASE %(setting)s::text WHEN 'rate' THEN excluded.rate_burst
                     ELSE settings.rate_burst END,
        rate_empty_us = CASE %(setting)s::text WHEN 'rate' THEN NULL
                        ELSE settings.rate_empty_us END,
        rate_empty_rem = CASE %(setting)s::text WHEN 'rate' THEN NULL
                         ELSE settings.rate_empty_rem END
    RETURNING settings.queue, settings.paused, settings.concurrency_limit
),
hints AS (
    SELECT pg_notify(%(channel)s, changed.queue) FROM changed
    WHERE NOT changed.paused
)
SELECT changed.queue, changed.paused, changed.concurrency_limit
FROM changed CROSS JOIN (SELECT count(*) FROM hints) AS sent
