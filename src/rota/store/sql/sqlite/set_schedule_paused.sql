-- Pause or resume a schedule. Resuming a paused one moves registered_at up to now, so the
-- instants that passed while it was paused never fire (on any worker). SET reads the old
-- row's values.
UPDATE rota_schedules
SET paused = :paused,
    registered_at = CASE WHEN paused = 1 AND :paused = 0 AND registered_at < :now
                         THEN :now ELSE registered_at END
WHERE name = :name;
