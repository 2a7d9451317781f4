-- Create a schedule's row (registered now) or take it over with this App's definition;
-- registered_at and last_fire_at of an existing row are kept.
INSERT INTO rota_schedules (name, definition, rule, timezone, job_name, queue,
                            registered_at, updated_at)
VALUES (:name, :definition, :rule, :timezone, :job_name, :queue, :now, :now)
ON CONFLICT (name) DO UPDATE SET
    definition = excluded.definition,
    rule       = excluded.rule,
    timezone   = excluded.timezone,
    job_name   = excluded.job_name,
    queue      = excluded.queue,
    updated_at = excluded.updated_at;
