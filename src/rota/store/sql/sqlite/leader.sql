-- The owner of a live leader lease, if any.
SELECT owner FROM rota_leaders WHERE name = :name AND expires_at > :now;
