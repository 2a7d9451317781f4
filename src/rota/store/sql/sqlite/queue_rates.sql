-- The rates and buckets of the rated Queues among :queues (a JSON array of names), read
-- by a claim inside its write transaction: no other claimer takes tokens until it commits.
SELECT queue, rate_jobs, rate_per_us, rate_burst, rate_empty_us, rate_empty_rem
FROM rota_queue_settings
WHERE rate_jobs IS NOT NULL AND queue IN (SELECT value FROM json_each(:queues));
