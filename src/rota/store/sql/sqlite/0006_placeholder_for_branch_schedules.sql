-- PLACEHOLDER (branch registry): migration 6 belongs to branch schedules. It exists only
-- so that versions run 1..7 with no gap on the registry branch. DELETE THIS FILE when
-- merging: branch schedules' 0006_*.sql replaces it.
PRAGMA user_version = 6;
