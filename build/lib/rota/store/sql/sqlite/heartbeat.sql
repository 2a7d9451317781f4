-- Renew only a live lease (unexpired at :now) of this owner and attempt; report whether
-- its cancel was requested.
UPDATE rota_jobs
SET lease_expires_at = :lease_expires_at
WHERE id = :id AND state = 'leased' AND lease_owner = :owner AND attempt = :attempt
  AND lease_expires_at > :now
RETURNING id, cancel_requested;
