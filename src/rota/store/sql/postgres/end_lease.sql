-- Sent inside a statement that also sends the finish hint (rota.store.postgres.schema,
-- FINISHING).
-- End a leased job for good (`state` is dead_lettered, quarantined or cancelled) with its
-- error and that error's traceback (NULL when it came from no exception), fenced by its
-- lease.
UPDATE {schema}.jobs
SET state = %(state)s,
    last_error = %(error)s,
    last_traceback = %(traceback)s::text,
    finished_at = %(now)s,
    lease_owner = NULL,
    lease_expires_at = NULL
WHERE id = %(id)s
  AND state = 'leased'
  AND lease_owner = %(owner)s
  AND attempt = %(attempt)s
