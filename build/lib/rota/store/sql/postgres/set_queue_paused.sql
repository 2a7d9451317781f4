-- Pause or resume a Queue, keeping its limit; its settings after the change.
INSERT INTO {schema}.queue_settings AS settings (queue, paused)
VALUES (%(queue)s, %(paused)s)
ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused
RETURNING settings.queue, settings.paused, settings.concurrency_limit
