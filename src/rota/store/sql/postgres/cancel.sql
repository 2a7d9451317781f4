-- A scheduled or waiting job is cancelled at once (a waiting one's children settle: the
-- trigger of migration 14); a leased one gets a cancel request, which its worker learns
-- from its next heartbeat. Any other state: no row changes.
UPDATE {schema}.jobs
SET state = CASE WHEN state = 'leased' THEN state ELSE 'cancelled' END,
    finished_at = CASE WHEN state = 'leased' THEN finished_at ELSE %(now)s::timestamptz END,
    cancel_requested = (state = 'leased') OR cancel_requested
WHERE id = %(id)s AND state IN ('waiting', 'scheduled', 'leased')
