-- Schedule a leased job again at `due_at` with its error, fenced by its lease.
UPDATE {schema}.jobs
SET state = 'scheduled',
    due_at = %(due_at)s,
    last_error = %(error)s,
    lease_owner = NULL,
    lease_expires_at = NULL
WHERE id = %(id)s
  AND state = 'leased'
  AND lease_owner = %(owner)s
  AND attempt = %(attempt)s
