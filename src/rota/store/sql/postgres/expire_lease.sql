-- End a lease that is still held and expired at `now`: retry at `due_at`, or
-- dead-letter when `due_at` is NULL. Two sweepers racing apply it exactly once: the
-- second finds the job no longer leased.
UPDATE {schema}.jobs
SET state = CASE WHEN %(due_at)s::timestamptz IS NULL THEN 'dead_lettered' ELSE 'scheduled' END,
    due_at = coalesce(%(due_at)s::timestamptz, due_at),
    finished_at = CASE WHEN %(due_at)s::timestamptz IS NULL THEN %(now)s END,
    last_error = %(error)s,
    lease_owner = NULL,
    lease_expires_at = NULL
WHERE id = %(id)s
  AND state = 'leased'
  AND lease_owner = %(owner)s
  AND attempt = %(attempt)s
  AND lease_expires_at <= %(now)s
