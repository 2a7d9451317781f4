-- Set (kind NULL: clear) a Worker Group's stored policy in one statement, however many
-- Queues it names; the row's new version.
INSERT INTO {schema}.group_policies AS policies
    (name, kind, queues, weights, version, updated_at)
VALUES (%(group)s, %(kind)s, %(queues)s, %(weights)s, 1, %(now)s)
ON CONFLICT (name) DO UPDATE SET
    kind = excluded.kind, queues = excluded.queues, weights = excluded.weights,
    version = policies.version + 1, updated_at = excluded.updated_at
RETURNING policies.version
