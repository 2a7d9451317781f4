-- Create each schedule's row (registered now) or take it over with this App's
-- definition; registered_at, last_fire_at and paused of an existing row are kept. A
-- stored schedule of the same name becomes this code's schedule (the code deployed takes
-- the name). One statement for all of an App's schedules.
INSERT INTO {schema}.schedules (name, definition, rule, timezone, job_name, queue, args,
                                kwargs, registered_at, updated_at)
SELECT s.name, s.definition, s.rule, s.timezone, s.job_name, s.queue, s.args, s.kwargs,
       %(now)s, %(now)s
FROM unnest(%(names)s::text[], %(definitions)s::text[], %(rules)s::text[],
            %(timezones)s::text[], %(job_names)s::text[], %(queues)s::text[],
            %(args)s::text[], %(kwargs)s::text[])
     AS s(name, definition, rule, timezone, job_name, queue, args, kwargs)
ON CONFLICT (name) DO UPDATE SET
    definition = excluded.definition,
    rule       = excluded.rule,
    timezone   = excluded.timezone,
    job_name   = excluded.job_name,
    queue      = excluded.queue,
    args       = excluded.args,
    kwargs     = excluded.kwargs,
    stored     = false,
    updated_at = excluded.updated_at
