-- Pause or resume a schedule. Resuming a paused one moves registered_at up to now, so the
-- instants that passed while it was paused never fire (on any worker). SET reads the old
-- row's values.
UPDATE {schema}.schedules
SET paused = %(paused)s,
    registered_at = CASE WHEN paused AND NOT %(paused)s AND registered_at < %(now)s
                         THEN %(now)s ELSE registered_at END
WHERE name = %(name)s
