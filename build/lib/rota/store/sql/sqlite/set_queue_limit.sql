-- Set (or with NULL remove) a Queue's concurrency limit, keeping its pause; its settings after.
INSERT INTO rota_queue_settings (queue, concurrency_limit) VALUES (:queue, :limit)
ON CONFLICT (queue) DO UPDATE SET concurrency_limit = excluded.concurrency_limit
RETURNING queue, paused, concurrency_limit;
