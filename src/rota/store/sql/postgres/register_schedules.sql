-- Create each schedule's row (registered now) or take it over with this App's
-- definition; registered_at and last_fire_at of an existing row are kept. One statement
-- for all of an App's schedules.
INSERT INTO {schema}.schedules (name, definition, rule, timezone, job_name, queue,
                                registered_at, updated_at)
SELECT s.name, s.definition, s.rule, s.timezone, s.job_name, s.queue, %(now)s, %(now)s
FROM unnest(%(names)s::text[], %(definitions)s::text[], %(rules)s::text[],
            %(timezones)s::text[], %(job_names)s::text[], %(queues)s::text[])
     AS s(name, definition, rule, timezone, job_name, queue)
ON CONFLICT (name) DO UPDATE SET
    definition = excluded.definition,
    rule       = excluded.rule,
    timezone   = excluded.timezone,
    job_name   = excluded.job_name,
    queue      = excluded.queue,
    updated_at = excluded.updated_at
