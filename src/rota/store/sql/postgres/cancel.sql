-- A scheduled or waiting job is cancelled at once (a waiting one's children settle: the
-- trigger of migration 14); a leased one gets a cancel request, which its worker learns
-- from its next heartbeat. Any other state: no row changes.
-- Finishing sends the finish hint (`listen_finished`): finished_at's value comes from an
-- uncorrelated subquery that also calls pg_notify, which PostgreSQL runs once per
-- statement (an InitPlan), when the first row is finished, and never if none is.
UPDATE {schema}.jobs
SET state = CASE WHEN state = 'leased' THEN state ELSE 'cancelled' END,
    finished_at = CASE WHEN state = 'leased' THEN finished_at ELSE
        (SELECT %(now)s::timestamptz FROM (SELECT pg_notify({finished_channel}, '')) AS hint)
        END,
    -- a job cancelled before it ran says so; a leased one keeps its error until it ends
    last_error = CASE WHEN state = 'leased' THEN last_error ELSE %(cancelled_error)s END,
    last_traceback = CASE WHEN state = 'leased' THEN last_traceback END,
    cancel_requested = (state = 'leased') OR cancel_requested
WHERE id = %(id)s AND state IN ('waiting', 'scheduled', 'leased')
