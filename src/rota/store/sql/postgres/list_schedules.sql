SELECT name, definition, rule, timezone, job_name, queue, registered_at, updated_at,
       last_fire_at, args, kwargs, paused, stored
FROM {schema}.schedules
ORDER BY name
