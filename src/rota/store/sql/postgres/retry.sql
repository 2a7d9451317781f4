-- Schedule a leased job again at `due_at` with its error, fenced by its lease.
-- Finishing sends the finish hint (`listen_finished`): finished_at's value comes from an
-- uncorrelated subquery that also calls pg_notify, which PostgreSQL runs once per
-- statement (an InitPlan), when the first row is finished, and never if none is.
UPDATE {schema}.jobs
-- A job whose cancel was requested never goes back to scheduled: it ends cancelled.
SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'scheduled' END,
    -- The enqueue hint with the job's Queue and due time, sent at commit: a subquery
    -- correlated with the row, so one per job retried (listener.py).
    due_at = (SELECT %(due_at)s::timestamptz
              FROM (SELECT pg_notify(%(channel)s, queue || ' ' || floor(
                  extract(epoch FROM %(due_at)s::timestamptz) * 1000000)::bigint)) AS hint),
    last_error = CASE WHEN cancel_requested THEN %(cancelled_error)s::text ELSE %(error)s END,
    -- the traceback goes with the error it explains (NULL beside a cancel)
    last_traceback = CASE WHEN cancel_requested THEN NULL ELSE %(traceback)s::text END,
    finished_at = CASE WHEN cancel_requested THEN
        (SELECT %(now)s::timestamptz FROM (SELECT pg_notify({finished_channel}, '')) AS hint) END,
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
