-- Sent inside a statement that also sends the finish hint (rota.store.postgres.schema,
-- FINISHING).
-- A scheduled job is cancelled at once; a leased one gets a cancel request, which its
-- worker learns from its next heartbeat. Any other state: no row changes.
UPDATE {schema}.jobs
SET state = CASE state WHEN 'scheduled' THEN 'cancelled' ELSE state END,
    finished_at = CASE state WHEN 'scheduled' THEN %(now)s::timestamptz ELSE finished_at END,
    cancel_requested = (state = 'leased') OR cancel_requested
WHERE id = %(id)s AND state IN ('scheduled', 'leased')
