SELECT name, kind, queues, weights, pool_size, seen_at
FROM rota_worker_groups
ORDER BY name;
