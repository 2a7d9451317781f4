-- Positional parameters: 1 id, 2 owner, 3 attempt. Fenced by the lease.
UPDATE rota_jobs
SET state = 'succeeded', lease_owner = NULL, lease_expires_at = NULL
WHERE id = ? AND state = 'leased' AND lease_owner = ? AND attempt = ?;
