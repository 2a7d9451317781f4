-- Set (kind NULL: clear) a Worker Group's stored policy in one statement, however many
-- Queues it names; the row's new version.
INSERT INTO rota_group_policies (name, kind, queues, weights, version, updated_at)
VALUES (:group, :kind, :queues, :weights, 1, :now)
ON CONFLICT (name) DO UPDATE SET
    kind = excluded.kind, queues = excluded.queues, weights = excluded.weights,
    version = rota_group_policies.version + 1, updated_at = excluded.updated_at
RETURNING version;
