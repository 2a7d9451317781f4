-- Create a schedule's row (registered now) or take it over with this App's definition;
-- registered_at, last_fire_at and paused of an existing row are kept. A stored schedule
-- of the same name becomes this code's schedule (the code deployed takes the name).
INSERT INTO rota_schedules (name, definition, rule, timezone, job_name, queue, args, kwargs,
                            registered_at, updated_at)
VALUES (:name, :definition, :rule, :timezone, :job_name, :queue, :args, :kwargs, :now, :now)
ON CONFLICT (name) DO UPDATE SET
    definition = excluded.definition,
    rule       = excluded.rule,
    timezone   = excluded.timezone,
    job_name   = excluded.job_name,
    queue      = excluded.queue,
    args       = excluded.args,
    kwargs     = excluded.kwargs,
    stored     = 0,
    updated_at = excluded.updated_at;
