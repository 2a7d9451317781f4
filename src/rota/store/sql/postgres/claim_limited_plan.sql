-- The first statement of a limited claim's transaction (before lock_queue_limits.sql and
-- claim_limited, claim.sql's part room): no bitmap scans and no sequential scans for this
-- transaction. claim_limited counts a Queue's leases on jobs_lease_expiry. With few leased rows in
-- its statistics the planner likes a bitmap scan there, which never marks dead index
-- entries, so the count would slow down with every job drained until the next vacuum; an
-- index scan marks them. On a table never analysed (a bulk load before autovacuum's first
-- ANALYZE, or autovacuum off) it knows nothing of how few rows hold a lease and scans the
-- whole table instead: 18 ms a claim on 200,000 jobs, 1.2 ms with the scans off. Every
-- table these statements read has an index for what they ask (docs/decisions/0059).
SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true)
