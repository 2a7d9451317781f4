-- Positional parameters: 1 result (JSON text or NULL), 2 finished_at, 3 id, 4 owner,
-- 5 attempt. Fenced by the lease.
UPDATE rota_jobs
SET state = 'succeeded', result = ?, finished_at = ?, lease_owner = NULL,
    lease_expires_at = NULL
WHERE id = ? AND state = 'leased' AND lease_owner = ? AND attempt = ?;
