-- A worker's refresh, with its heartbeats: liveness, jobs in flight, served totals.
UPDATE rota_workers
SET last_seen = :now, dead_at = :dead_at, in_flight = :in_flight, served = :served
WHERE id = :id;
