-- The Queues that received jobs with ids above :after, and the newest id of each
-- (a primary-key range scan: only the new rows are read).
SELECT queue, max(id) FROM rota_jobs WHERE id > :after GROUP BY queue
