-- Pause or resume a Queue, keeping its limit; its settings after the change.
-- A resume wakes the Queue's workers in other processes at once (a NOTIFY on the enqueue
-- channel); a pause sends nothing.
WITH changed AS (
    INSERT INTO {schema}.queue_settings AS settings (queue, paused)
    VALUES (%(queue)s, %(paused)s)
    ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused
    RETURNING settings.queue, settings.paused, settings.concurrency_limit
),
hints AS (
    SELECT pg_notify(%(channel)s, changed.queue) FROM changed
    WHERE NOT changed.paused
)
SELECT changed.queue, changed.paused, changed.concurrency_limit
FROM changed CROSS JOIN (SELECT count(*) FROM hints) AS sent
