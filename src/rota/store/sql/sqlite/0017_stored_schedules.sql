-- Migration 17: schedules managed at run time (app.set_schedule) beside those in code, and a
-- pause for both. A stored schedule's row holds everything a worker needs to fire it
-- (rule, time zone, job name, Queue and its arguments as JSON text), so any worker whose
-- App defines the job fires it, with no code. `stored` = 1: managed at run time; 0: a
-- schedule in code (register_schedule.sql). `paused` = 1: fire_schedule.sql fires nothing.
-- Constant defaults: SQLite rewrites no rows to add these columns.
ALTER TABLE rota_schedules ADD COLUMN args TEXT NOT NULL DEFAULT '[]';
ALTER TABLE rota_schedules ADD COLUMN kwargs TEXT NOT NULL DEFAULT '{}';
ALTER TABLE rota_schedules ADD COLUMN paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1));
ALTER TABLE rota_schedules ADD COLUMN stored INTEGER NOT NULL DEFAULT 0 CHECK (stored IN (0, 1));

PRAGMA user_version = 17;
