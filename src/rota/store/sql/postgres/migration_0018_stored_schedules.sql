-- Migration 18: schedules managed at run time (app.set_schedule) beside those in code, and a
-- pause for both. A stored schedule's row holds everything a worker needs to fire it
-- (rule, time zone, job name, Queue and its arguments as JSON text), so any worker whose
-- App defines the job fires it, with no code. `stored`: managed at run time; false: a
-- schedule in code (register_schedules.sql). `paused`: fire_schedule.sql fires nothing.
-- {schema} is replaced by the store's schema, quoted as an identifier.
-- Constant defaults: PostgreSQL 11 and later rewrite no rows to add these columns.
ALTER TABLE {schema}.schedules
    ADD COLUMN args   text    NOT NULL DEFAULT '[]',
    ADD COLUMN kwargs text    NOT NULL DEFAULT '{{}}',
    ADD COLUMN paused boolean NOT NULL DEFAULT false,
    ADD COLUMN stored boolean NOT NULL DEFAULT false;
