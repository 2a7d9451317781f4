-- rota.Snooze: schedule a leased job again at `due_at`, fenced by its lease, without
-- counting the attempt it was claimed for (attempt - 1, as release.sql) and counting the
-- snooze; last_error and last_traceback are kept (a snooze is no failure).
-- A job whose cancel was requested never goes back to scheduled: it ends cancelled, and
-- finishing sends the finish hint (retry.sql says how).
UPDATE {schema}.jobs
SET state = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'scheduled' END,
    attempt = CASE WHEN cancel_requested THEN attempt ELSE attempt - 1 END,
    snoozes = CASE WHEN cancel_requested THEN snoozes ELSE snoozes + 1 END,
    -- The enqueue hint with the job's Queue and due time, sent at commit (retry.sql).
    due_at = (SELECT %(due_at)s::timestamptz
              FROM (SELECT pg_notify(%(channel)s, queue || ' ' || floor(
                  extract(epoch FROM %(due_at)s::timestamptz) * 1000000)::bigint)) AS hint),
    last_error = CASE WHEN cancel_requested THEN %(cancelled_error)s::text ELSE last_error END,
    last_traceback = CASE WHEN cancel_requested THEN NULL ELSE last_traceback END,
    finished_at = CASE WHEN cancel_requested THEN
        (SELECT %(now)s::timestamptz FROM (SELECT pg_notify({finished_channel}, '')) AS hint) END,
    lease_owner = NULL,
    lease_expires_at = NULL
WHERE id = %(id)s
  AND state = 'leased'
  AND lease_owner = %(owner)s
  AND attempt = %(attempt)s
