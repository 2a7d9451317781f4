-- Create a stored schedule (registered now) or replace the stored one of that name;
-- registered_at, last_fire_at and paused of an existing row are kept. A row of a schedule
-- in code is left alone: no row changed tells the caller the name is taken.
INSERT INTO {schema}.schedules AS s (name, definition, rule, timezone, job_name, queue, args,
                                     kwargs, stored, registered_at, updated_at)
VALUES (%(name)s, %(definition)s, %(rule)s, %(timezone)s, %(job_name)s, %(queue)s,
        %(args)s, %(kwargs)s, true, %(now)s, %(now)s)
ON CONFLICT (name) DO UPDATE SET
    definition = excluded.definition,
    rule       = excluded.rule,
    timezone   = excluded.timezone,
    job_name   = excluded.job_name,
    queue      = excluded.queue,
    args       = excluded.args,
    kwargs     = excluded.kwargs,
    updated_at = excluded.updated_at
WHERE s.stored
