-- Hand many unfinished jobs back at their old due time, in one statement, each fenced by
-- (id, owner, attempt); the attempt they were claimed for does not count.
-- Finishing sends the finish hint (`listen_finished`): finished_at's value comes from an
-- uncorrelated subquery that also calls pg_notify, which PostgreSQL runs once per
-- statement (an InitPlan), when the first row is finished, and never if none is.
UPDATE {schema}.jobs AS jobs
-- A job whose cancel was requested never goes back to scheduled: it ends cancelled.
SET state = CASE WHEN jobs.cancel_requested THEN 'cancelled' ELSE 'scheduled' END,
    attempt = CASE WHEN jobs.cancel_requested THEN jobs.attempt ELSE jobs.attempt - 1 END,
    last_error = CASE WHEN jobs.cancel_requested THEN %(cancelled_error)s::text
                      ELSE jobs.last_error END,
    last_traceback = CASE WHEN jobs.cancel_requested THEN NULL ELSE jobs.last_traceback END,
    finished_at = CASE WHEN jobs.cancel_requested THEN
        (SELECT %(now)s::timestamptz FROM (SELECT pg_notify({finished_channel}, '')) AS hint) END,
    -- The enqueue hint with the job's Queue and due time, sent at commit (retry.sql).
    due_at = (SELECT jobs.due_at
              FROM (SELECT pg_notify(%(channel)s, jobs.queue || ' ' || floor(
                  extract(epoch FROM jobs.due_at) * 1000000)::bigint)) AS hint),
    lease_owner = NULL,
    lease_expires_at = NULL
FROM unnest(%(ids)s::bigint[], %(owners)s::text[], %(attempts)s::integer[])
    AS lease(id, owner, attempt)
WHERE jobs.id = lease.id
  AND jobs.state = 'leased'
  AND jobs.lease_owner = lease.owner
  AND jobs.attempt = lease.attempt
