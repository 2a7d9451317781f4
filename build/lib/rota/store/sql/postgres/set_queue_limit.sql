-- Set (or with NULL remove) a Queue's concurrency limit, keeping its pause; its settings
-- after the change.
INSERT INTO {schema}.queue_settings AS settings (queue, concurrency_limit)
VALUES (%(queue)s, %(limit)s)
ON CONFLICT (queue) DO UPDATE SET concurrency_limit = excluded.concurrency_limit
RETURNING settings.queue, settings.paused, settings.concurrency_limit
