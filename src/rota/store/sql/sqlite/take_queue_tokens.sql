-- A claim took tokens from a rated Queue's bucket: its new empty instant (rota.core.rates.take).
UPDATE rota_queue_settings
SET rate_empty_us = :empty_us, rate_empty_rem = :empty_rem
WHERE queue = :queue;
