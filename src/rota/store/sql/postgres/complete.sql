-- Mark many leased jobs succeeded in one statement, each fenced by (id, owner, attempt).
-- Finishing sends the finish hint (`listen_finished`): finished_at's value comes from an
-- uncorrelated subquery that also calls pg_notify, which PostgreSQL runs once per
-- statement (an InitPlan), when the first row is finished, and never if none is.
UPDATE {schema}.jobs AS jobs
SET state = 'succeeded',
    finished_at = (SELECT %(now)s::timestamptz FROM (SELECT pg_notify({finished_channel}, '')) AS hint),
    lease_owner = NULL,
    lease_expires_at = NULL
FROM unnest(%(ids)s::bigint[], %(owners)s::text[], %(attempts)s::integer[])
    AS lease(id, owner, attempt)
WHERE jobs.id = lease.id
  AND jobs.state = 'leased'
  AND jobs.lease_owner = lease.owner
  AND jobs.attempt = lease.attempt
