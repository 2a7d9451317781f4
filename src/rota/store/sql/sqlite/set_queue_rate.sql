-- Set (or with NULLs remove) a Queue's rate limit, its bucket full; keeps its pause and limit.
INSERT INTO rota_queue_settings (queue, rate_jobs, rate_per_us, rate_burst)
VALUES (:queue, :jobs, :per_us, :burst)
ON CONFLICT (queue) DO UPDATE SET
    rate_jobs = excluded.rate_jobs, rate_per_us = excluded.rate_per_us,
    rate_burst = excluded.rate_burst, rate_empty_us = NULL, rate_empty_rem = NULL
RETURNING queue, paused, concurrency_limit;
