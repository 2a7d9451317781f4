-- A worker's refresh, with its heartbeats: liveness, jobs in flight, served totals and its
-- clock's offset.
UPDATE rota_workers
SET last_seen = :now, dead_at = :dead_at, in_flight = :in_flight, served = :served,
    clock_offset = :clock_offset
WHERE id = :id;
