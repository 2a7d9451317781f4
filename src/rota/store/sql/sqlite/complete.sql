-- Finish a batch of leases as succeeded, each job fenced by its lease. Positional
-- parameters: ?1 the finish time; then one `(?, ?, ?, ?)` row per lease in the rows
-- placeholder below (id, owner, attempt, result: a JSON text), numbered on from ?2; a
-- batch without results has `(?, ?, ?, NULL)` rows. One statement for the batch (its text
-- cached per batch size); it returns the Queue of each job it finished, which the store
-- counts (migration 8), and beside it the id of a job with children (NULL for any other:
-- the store then wakes the Queues of the children it released). A lease listed twice
-- finishes its job once.
UPDATE rota_jobs
SET state = 'succeeded', result = lease.column4, finished_at = ?1,
    lease_owner = NULL, lease_expires_at = NULL
FROM (VALUES {rows}) AS lease
WHERE rota_jobs.id = lease.column1
  AND rota_jobs.state = 'leased'
  AND rota_jobs.lease_owner = lease.column2
  AND rota_jobs.attempt = lease.column3
RETURNING rota_jobs.queue, CASE WHEN rota_jobs.has_children THEN rota_jobs.id END;
