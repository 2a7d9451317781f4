-- PLACEHOLDER (branch registry): migration 6 belongs to branch schedules. It exists only
-- so that versions run 1..7 with no gap on the registry branch. DELETE THIS FILE when
-- merging: branch schedules' migration_0006_*.sql replaces it.
SELECT 1
