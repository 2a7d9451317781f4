-- Lease due jobs of several Queues in one statement: a batched claim with per-Queue limits
-- (a round of the Weighted planner). The arms placeholder below becomes one claim_many_arm.sql per Queue, joined
-- by UNION ALL, each an index range scan of its own Queue (rota_jobs_claimable) with its own LIMIT (that
-- Queue's room, as in claim.sql). Used only when the per-Queue limits together fit in the
-- claim's total (then the arms are independent); otherwise the store runs claim.sql Queue
-- after Queue. One statement instead of one per Queue: a pass over 20 tenants cost 20.
-- RETURNING rows come back in no guaranteed order: the caller groups and sorts them.
UPDATE rota_jobs
SET state = 'leased',
    attempt = attempt + 1,
    lease_owner = :owner,
    lease_expires_at = :lease_expires_at,
    started_at = :now
WHERE id IN (
{arms}
)
-- The same columns as claim.sql's RETURNING (the caller decodes them alike).
RETURNING id, name, queue, attempt, due_at, args, kwargs, last_error, created_at, result,
          cancel_requested, finished_at, trace_context, parents;
