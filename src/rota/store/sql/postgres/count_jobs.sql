-- Jobs per (Queue, state): the folded counts plus the deltas not folded yet, in one
-- statement (one snapshot), so exact at it (migration 8). Pairs with none are left out.
SELECT queue, state, sum(jobs)::bigint
FROM (
    SELECT queue, state, jobs FROM {schema}.job_counts
    UNION ALL
    SELECT queue, state, jobs FROM {schema}.job_count_deltas
) AS counted
GROUP BY queue, state
HAVING sum(jobs) > 0
