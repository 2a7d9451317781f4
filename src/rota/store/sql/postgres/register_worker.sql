-- Insert or replace a worker's row, and record its groups (the last registration wins).
WITH worker AS (
    INSERT INTO {schema}.workers AS w
        (id, host, pid, version, started_at, last_seen, dead_at, groups, in_flight, served,
         clock_offset)
    VALUES (%(id)s, %(host)s, %(pid)s, %(version)s, %(started_at)s, %(now)s, %(dead_at)s,
            %(groups)s, %(in_flight)s, %(served)s, %(clock_offset)s)
    ON CONFLICT (id) DO UPDATE SET
        host = excluded.host, pid = excluded.pid, version = excluded.version,
        started_at = excluded.started_at, last_seen = excluded.last_seen,
        dead_at = excluded.dead_at, groups = excluded.groups, in_flight = excluded.in_flight,
        served = excluded.served, clock_offset = excluded.clock_offset
    RETURNING w.id
)
INSERT INTO {schema}.worker_groups AS g (name, kind, queues, weights, pool_size, seen_at)
SELECT name, kind, queues, weights, pool_size, %(now)s
FROM unnest(%(names)s::text[], %(kinds)s::text[], %(queue_lists)s::text[],
            %(weight_lists)s::text[], %(pool_sizes)s::integer[])
    AS new(name, kind, queues, weights, pool_size)
ON CONFLICT (name) DO UPDATE SET
    kind = excluded.kind, queues = excluded.queues, weights = excluded.weights,
    pool_size = excluded.pool_size, seen_at = excluded.seen_at
