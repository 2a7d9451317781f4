-- Positional parameters: 1 id, 2 owner, 3 attempt. Fenced by the lease.
-- Back to its Queue at its old due time; the attempt it was claimed for does not count.
UPDATE rota_jobs
SET state = 'scheduled', attempt = attempt - 1, lease_owner = NULL, lease_expires_at = NULL
WHERE id = ? AND state = 'leased' AND lease_owner = ? AND attempt = ?;
