-- Sent inside a statement that also sends the finish hint (rota.store.postgres.schema,
-- FINISHING).
-- Mark many leased jobs succeeded in one statement, each fenced by (id, owner, attempt).
UPDATE {schema}.jobs AS jobs
SET state = 'succeeded',
    finished_at = %(now)s,
    lease_owner = NULL,
    lease_expires_at = NULL
FROM unnest(%(ids)s::bigint[], %(owners)s::text[], %(attempts)s::integer[])
    AS lease(id, owner, attempt)
WHERE jobs.id = lease.id
  AND jobs.state = 'leased'
  AND jobs.lease_owner = lease.owner
  AND jobs.attempt = lease.attempt
