-- Change one of a Queue's settings, keeping the others; its settings after. :setting says
-- which: 'paused' (:paused, 1 or 0), 'limit' (:limit, NULL for none) or 'rate' (:jobs,
-- :per_us, :burst, NULLs for none; its bucket starts full). A Queue without a row gets one
-- with the defaults for the others (not paused, no limit, no rate).
INSERT INTO rota_queue_settings (queue, paused, concurrency_limit, rate_jobs, rate_per_us,
                                 rate_burst)
VALUES (:queue, coalesce(:paused, 0), :limit, :jobs, :per_us, :burst)
ON CONFLICT (queue) DO UPDATE SET
    paused = CASE :setting WHEN 'paused' THEN excluded.paused ELSE paused END,
    concurrency_limit = CASE :setting WHEN 'limit' THEN excluded.concurrency_limit
                        ELSE concurrency_limit END,
    rate_jobs = CASE :setting WHEN 'rate' THEN excluded.rate_jobs ELSE rate_jobs END,
    rate_per_us = CASE :setting WHEN 'rate' THEN excluded.rate_per_us ELSE rate_per_us END,
    rate_burst = CASE :setting WHEN 'rate' THEN excluded.rate_burst ELSE rate_burst END,
    rate_empty_us = CASE :setting WHEN 'rate' THEN NULL ELSE rate_empty_us END,
    rate_empty_rem = CASE :setting WHEN 'rate' THEN NULL ELSE rate_empty_rem END
RETURNING queue, paused, concurrency_limit;
