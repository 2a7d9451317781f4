-- A claim took tokens from a rated Queue's bucket: its new empty instant (rota.core.rates.take).
-- A member whose rate is its family's may have no row yet: it gets one holding its bucket.
INSERT INTO rota_queue_settings (queue, rate_empty_us, rate_empty_rem)
VALUES (:queue, :empty_us, :empty_rem)
ON CONFLICT (queue) DO UPDATE SET
    rate_empty_us = excluded.rate_empty_us, rate_empty_rem = excluded.rate_empty_rem;
