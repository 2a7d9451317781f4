-- Hand many unfinished jobs back at their old due time, in one statement, each fenced by
-- (id, owner, attempt); the attempt they were claimed for does not count.
UPDATE {schema}.jobs AS jobs
SET state = 'scheduled',
    attempt = jobs.attempt - 1,
    lease_owner = NULL,
    lease_expires_at = NULL
FROM unnest(%(ids)b::bigint[], %(owners)b::text[], %(attempts)b::integer[])
    AS lease(id, owner, attempt)
WHERE jobs.id = lease.id
  AND jobs.state = 'leased'
  AND jobs.lease_owner = lease.owner
  AND jobs.attempt = lease.attempt
