-- Mark a batch of leased jobs succeeded, by id array.
UPDATE jobs
SET state = 'succeeded',
    finished_at = %(now)s,
    lease_owner = NULL,
    lease_expires_at = NULL
WHERE id = ANY(%(ids)s) AND state = 'leased' AND lease_owner = %(owner)s
