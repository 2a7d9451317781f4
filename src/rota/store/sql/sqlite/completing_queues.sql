-- Of the leases in :leases (JSON [[id, owner, attempt], ...], no duplicates), the Queue of
-- each that complete.sql will finish: read in complete's transaction, before it, so the
-- counts of migration 8 move by exactly what it changes. One primary-key lookup a lease.
SELECT jobs.queue
FROM json_each(:leases) AS lease
JOIN rota_jobs AS jobs ON jobs.id = json_extract(lease.value, '$[0]')
WHERE jobs.state = 'leased'
  AND jobs.lease_owner = json_extract(lease.value, '$[1]')
  AND jobs.attempt = json_extract(lease.value, '$[2]');
