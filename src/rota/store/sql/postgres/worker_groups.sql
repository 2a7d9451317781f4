SELECT name, kind, queues, weights, pool_size, seen_at
FROM {schema}.worker_groups
ORDER BY name
