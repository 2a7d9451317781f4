-- One fire, in one statement (one round trip): move last_fire_at forward if this instant
-- is after the registration and the last fire, the caller holds the current definition
-- and the schedule is not paused, and insert the job (due at the instant) only if that
-- row was changed; send the wake-up hint for its Queue. Concurrent fires of one instant: the first takes the
-- row lock, the others wait for it, re-check the WHERE clause against the row it wrote
-- (READ COMMITTED), find last_fire_at no longer earlier, and insert nothing.
-- Returns the new job's id (NULL: nothing fired) and the definition the store held when
-- the statement started (NULL: no such schedule), which tells "fired by someone else"
-- from "another App's definition".
WITH fired AS (
    UPDATE {schema}.schedules
    SET last_fire_at = %(fire_at)s
    WHERE name = %(name)s
      AND definition = %(definition)s
      AND NOT paused
      AND registered_at < %(fire_at)s
      AND (last_fire_at IS NULL OR last_fire_at < %(fire_at)s)
    RETURNING name
),
new_job AS (
    INSERT INTO {schema}.jobs (name, queue, due_at, args, kwargs, created_at)
    SELECT %(job_name)s, %(queue)s, %(fire_at)s, %(args)s::json, %(kwargs)s::json, %(now)s
    FROM fired
    RETURNING id, queue, due_at
),
hints AS (
    SELECT pg_notify(%(channel)s, new_job.queue || ' ' || floor(extract(epoch FROM new_job.due_at) * 1000000)::bigint)
    FROM new_job
)
SELECT (SELECT id FROM new_job),
       (SELECT definition FROM {schema}.schedules WHERE name = %(name)s),
       (SELECT count(*) FROM hints)
