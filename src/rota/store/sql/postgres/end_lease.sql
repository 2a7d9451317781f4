-- End a leased job for good (`state` is dead_lettered, quarantined or cancelled) with its
-- error and that error's traceback (NULL when it came from no exception), fenced by its
-- lease.
-- Finishing sends the finish hint (`listen_finished`): finished_at's value comes from an
-- uncorrelated subquery that also calls pg_notify, which PostgreSQL runs once per
-- statement (an InitPlan), when the first row is finished, and never if none is.
UPDATE {schema}.jobs
SET state = %(state)s,
    last_error = %(error)s,
    last_traceback = %(traceback)s::text,
    finished_at = (SELECT %(now)s::timestamptz FROM (SELECT pg_notify({finished_channel}, '')) AS hint),
    -- a failed attempt (dead-lettered, quarantined) appended to the last 20
    -- (rota.core.progress.MAX_KEPT_ERRORS); NULL for a cancel, which is no failure
    errors = CASE WHEN %(attempt_error)s::jsonb IS NULL THEN errors ELSE
                 (CASE WHEN jsonb_array_length(coalesce(errors, '[]'::jsonb)) >= 20 THEN errors - 0
                   ELSE coalesce(errors, '[]'::jsonb) END
              || jsonb_build_array(%(attempt_error)s::jsonb)) END,
    lease_owner = NULL,
    lease_expires_at = NULL
WHERE id = %(id)s
  AND state = 'leased'
  AND lease_owner = %(owner)s
  AND attempt = %(attempt)s
