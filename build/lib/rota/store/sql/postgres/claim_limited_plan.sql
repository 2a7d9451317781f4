-- The first statement of a limited claim's transaction (before lock_queue_limits.sql and
-- claim_limited.sql): no bitmap scans for this transaction. claim_limited.sql counts a
-- Queue's leases on jobs_lease_expiry; with few leased rows in its statistics the planner
-- likes a bitmap scan there, which never marks dead index entries, so the count would
-- slow down with every job drained until the next vacuum. An index scan marks them.
SET LOCAL enable_bitmapscan = off
