-- A scheduled job is cancelled at once (and so finished); a leased one gets a cancel
-- request, which its worker learns from its next heartbeat. Any other state: no row changes.
UPDATE rota_jobs
SET state = CASE state WHEN 'scheduled' THEN 'cancelled' ELSE state END,
    finished_at = CASE state WHEN 'scheduled' THEN :now ELSE finished_at END,
    cancel_requested = CASE state WHEN 'leased' THEN 1 ELSE cancel_requested END
WHERE id = :id AND state IN ('scheduled', 'leased');
