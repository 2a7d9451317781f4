-- Finish the leases in :leases (JSON [[id, owner, attempt, result], ...]; result a JSON
-- text, or null or left out: none) as succeeded; each job is fenced by its lease. One
-- statement for the batch; it returns the Queue of each job it finished, which the store
-- counts (migration 8). A lease listed twice finishes its job once.
UPDATE rota_jobs
SET state = 'succeeded', result = json_extract(lease.value, '$[3]'), finished_at = :now,
    lease_owner = NULL, lease_expires_at = NULL
FROM json_each(:leases) AS lease
WHERE rota_jobs.id = json_extract(lease.value, '$[0]')
  AND rota_jobs.state = 'leased'
  AND rota_jobs.lease_owner = json_extract(lease.value, '$[1]')
  AND rota_jobs.attempt = json_extract(lease.value, '$[2]')
RETURNING rota_jobs.queue;
