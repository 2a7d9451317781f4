-- A Worker Group as a worker registers it; the last registration wins.
INSERT INTO rota_worker_groups (name, kind, queues, weights, pool_size, seen_at)
VALUES (:name, :kind, :queues, :weights, :pool_size, :now)
ON CONFLICT (name) DO UPDATE SET
    kind = excluded.kind, queues = excluded.queues, weights = excluded.weights,
    pool_size = excluded.pool_size, seen_at = excluded.seen_at;
