-- Set (or with NULL remove) a Queue's concurrency limit, keeping its pause; its settings
-- after the change.
-- The change wakes the Queue's workers in other processes at once (a NOTIFY on the
-- enqueue channel) unless the Queue is paused: a higher limit, or none, may leave room.
WITH changed AS (
    INSERT INTO {schema}.queue_settings AS settings (queue, concurrency_limit)
    VALUES (%(queue)s, %(limit)s)
    ON CONFLICT (queue) DO UPDATE SET concurrency_limit = excluded.concurrency_limit
    RETURNING settings.queue, settings.paused, settings.concurrency_limit
),
hints AS (
    SELECT pg_notify(%(channel)s, changed.queue) FROM changed
    WHERE NOT changed.paused
)
SELECT changed.queue, changed.paused, changed.concurrency_limit
FROM changed CROSS JOIN (SELECT count(*) FROM hints) AS sent
