-- Pause (:paused = 1) or resume (0) a Queue, keeping its limit; its settings after.
INSERT INTO rota_queue_settings (queue, paused) VALUES (:queue, :paused)
ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused
RETURNING queue, paused, concurrency_limit;
