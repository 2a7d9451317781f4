-- Take or renew a leader lease in one statement, inside the write transaction: insert it
-- if there is none, else take it over if the caller holds it or it expired. Returns the
-- lease only if the caller holds it now (an upsert whose DO UPDATE WHERE fails returns
-- nothing and changes nothing). The store reads the lease first (leader_lease.sql) and
-- comes here only when it may take it, so that followers do not take the write lock.
INSERT INTO rota_leaders (name, owner, expires_at) VALUES (:name, :owner, :expires_at)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
WHERE rota_leaders.owner = excluded.owner OR rota_leaders.expires_at <= :now
RETURNING owner, expires_at;
