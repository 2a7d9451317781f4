-- Take or renew a leader lease in one statement, inside the write transaction: insert it
-- if there is none, else take it over if the caller holds it or it expired. Returns a row
-- only if the caller holds the lease now (an upsert whose DO UPDATE WHERE fails returns
-- nothing and changes nothing).
INSERT INTO rota_leaders (name, owner, expires_at) VALUES (:name, :owner, :expires_at)
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
WHERE rota_leaders.owner = excluded.owner OR rota_leaders.expires_at <= :now
RETURNING 1;
