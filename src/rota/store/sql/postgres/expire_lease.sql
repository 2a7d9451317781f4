-- End a lease that is still held and expired at `now`: retry at `due_at`, or
-- dead-letter when `due_at` is NULL. Two sweepers racing apply it exactly once: the
-- second finds the job no longer leased.
-- Finishing sends the finish hint (`listen_finished`): finished_at's value comes from an
-- uncorrelated subquery that also calls pg_notify, which PostgreSQL runs once per
-- statement (an InitPlan), when the first row is finished, and never if none is.
UPDATE {schema}.jobs
-- A job whose cancel was requested is not retried: it ends cancelled.
SET state = CASE WHEN %(due_at)s::timestamptz IS NULL THEN 'dead_lettered'
                 WHEN cancel_requested THEN 'cancelled'
                 ELSE 'scheduled' END,
    -- The enqueue hint with the job's Queue and due time, sent at commit (retry.sql).
    due_at = coalesce((SELECT %(due_at)s::timestamptz
                       FROM (SELECT pg_notify(%(channel)s, queue || ' ' || floor(
                           extract(epoch FROM %(due_at)s::timestamptz) * 1000000)::bigint))
                           AS hint
                       WHERE %(due_at)s::timestamptz IS NOT NULL), due_at),
    finished_at = CASE WHEN %(due_at)s::timestamptz IS NULL OR cancel_requested
                       THEN (SELECT %(now)s::timestamptz FROM (SELECT pg_notify({finished_channel}, '')) AS hint) END,
    last_error = CASE WHEN %(due_at)s::timestamptz IS NOT NULL AND cancel_requested
                      THEN %(cancelled_error)s::text ELSE %(error)s END,
    last_traceback = NULL, -- an expired lease raised nothing
    -- the failed attempt appended to the last 20 (rota.core.progress.MAX_KEPT_ERRORS)
    errors = (CASE WHEN jsonb_array_length(coalesce(errors, '[]'::jsonb)) >= 20 THEN errors - 0
                   ELSE coalesce(errors, '[]'::jsonb) END
              || jsonb_build_array(%(attempt_error)s::jsonb)),
    lease_owner = NULL,
    lease_expires_at = NULL
WHERE id = %(id)s
  AND state = 'leased'
  AND lease_owner = %(owner)s
  AND attempt = %(attempt)s
  AND lease_expires_at <= %(now)s
