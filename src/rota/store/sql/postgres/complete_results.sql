-- complete.sql with each job's result (JSON text or NULL). A separate statement so that
-- batches without results (the common case) send no array of NULLs.
-- Finishing sends the finish hint (`listen_finished`): finished_at's value comes from an
-- uncorrelated subquery that also calls pg_notify, which PostgreSQL runs once per
-- statement (an InitPlan), when the first row is finished, and never if none is.
UPDATE {schema}.jobs AS jobs
SET state = 'succeeded',
    finished_at = (SELECT %(now)s::timestamptz FROM (SELECT pg_notify({finished_channel}, '')) AS hint),
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
