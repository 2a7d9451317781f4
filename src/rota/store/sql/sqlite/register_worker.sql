-- Insert or replace a worker's row (registration at start, or again after removal).
INSERT INTO rota_workers
    (id, host, pid, version, started_at, last_seen, dead_at, groups, in_flight, served,
     clock_offset)
VALUES (:id, :host, :pid, :version, :started_at, :now, :dead_at, :groups, :in_flight, :served,
        :clock_offset)
ON CONFLICT (id) DO UPDATE SET
    host = excluded.host, pid = excluded.pid, version = excluded.version,
    started_at = excluded.started_at, last_seen = excluded.last_seen,
    dead_at = excluded.dead_at, groups = excluded.groups, in_flight = excluded.in_flight,
    served = excluded.served, clock_offset = excluded.clock_offset;
