-- A Worker Group's stored policy (kind NULL: cleared).
SELECT kind, queues, weights, version, updated_at
FROM rota_group_policies
WHERE name = :group;
