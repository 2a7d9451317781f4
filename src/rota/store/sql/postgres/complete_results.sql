-- Sent inside a statement that also sends the finish hint (rota.store.postgres.schema,
-- FINISHING).
-- complete.sql with each job's result (JSON text or NULL). A separate statement so that
-- batches without results (the common case) send no array of NULLs.
UPDATE {schema}.jobs AS jobs
SET state = 'succeeded',
    finished_at = %(now)s,
    result = lease.result::json,
    lease_owner = NULL,
    lease_expires_at = NULL
FROM unnest(%(ids)s::bigint[], %(owners)s::text[], %(attempts)s::integer[],
            %(results)b::text[])
    AS lease(id, owner, attempt, result)
WHERE jobs.id = lease.id
  AND jobs.state = 'leased'
  AND jobs.lease_owner = lease.owner
  AND jobs.attempt = lease.attempt
