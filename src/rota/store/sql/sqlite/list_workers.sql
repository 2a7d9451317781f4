SELECT id, host, pid, version, started_at, last_seen, dead_at, groups, in_flight, served,
    clock_offset
FROM rota_workers
ORDER BY started_at, id;
