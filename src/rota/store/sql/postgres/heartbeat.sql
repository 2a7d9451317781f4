-- Extend many live leases in one statement; a lease already expired at `now` is not
-- renewed, even by its owner. Returns the ids still held, and whether each one's cancel
-- was requested.
UPDATE {schema}.jobs AS jobs
SET lease_expires_at = %(lease_expires_at)s
FROM unnest(%(ids)s::bigint[], %(owners)s::text[], %(attempts)s::integer[])
    AS lease(id, owner, attempt)
WHERE jobs.id = lease.id
  AND jobs.state = 'leased'
  AND jobs.lease_owner = lease.owner
  AND jobs.attempt = lease.attempt
  -- "IS TRUE" keeps the planner off jobs_lease_expiry (a range scan per lease in generic
  -- plans): heartbeats go by primary key. Same meaning: a leased job has an expiry.
  AND (jobs.lease_expires_at > %(now)s) IS TRUE
RETURNING jobs.id, jobs.cancel_requested
