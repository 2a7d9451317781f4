-- PLACEHOLDER (branch schedules): migration 5 belongs to branch integrate (unique jobs).
-- It exists only so that versions run 1..6 with no gap on the schedules branch. DELETE THIS
-- FILE when merging: branch integrate's migration_0005_*.sql replaces it.
SELECT 1;
