-- Lease up to %(limit)s due jobs of one Queue in one statement; rows another claimer is
-- taking are skipped, never waited for.
UPDATE jobs
SET state = 'leased',
    attempt = attempt + 1,
    lease_owner = %(owner)s,
    lease_expires_at = %(lease_expires_at)s
WHERE id IN (
    SELECT id FROM jobs
    WHERE queue = %(queue)s AND state = 'scheduled' AND due_at <= %(now)s
    ORDER BY due_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
RETURNING id, name, args
