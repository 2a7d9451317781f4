-- complete.sql for a batch whose results are all None (the common case): one parameter
-- fewer to build and bind per job. Positional parameters: 1 finished_at, 2 id, 3 owner,
-- 4 attempt. Fenced by the lease.
UPDATE rota_jobs
SET state = 'succeeded', result = NULL, finished_at = ?, lease_owner = NULL,
    lease_expires_at = NULL
WHERE id = ? AND state = 'leased' AND lease_owner = ? AND attempt = ?;
