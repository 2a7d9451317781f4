-- A leader lease as stored, live or expired.
SELECT owner, expires_at FROM rota_leaders WHERE name = :name;
