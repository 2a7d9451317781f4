-- Migration 6: schedules (periodic jobs). One row per schedule name, written when a worker
-- of an App that defines the schedule starts (register_schedule.sql) and by every fire
-- (fire_schedule.sql). Times are INTEGER microseconds since the Unix epoch, UTC.
--
-- Exactly once per fire instant: a fire is a compare-and-set on last_fire_at (it only
-- moves forward) in the same write transaction as the job's insert, so two processes
-- can never both fire one instant. `definition` is the digest of the schedule as the App
-- that registered it last defines it; only an App with the same digest fires it.
-- Rows are never deleted: a schedule removed from the code keeps its row, inert.
CREATE TABLE rota_schedules (
    name          TEXT    PRIMARY KEY,
    definition    TEXT    NOT NULL,
    rule          TEXT    NOT NULL,
    timezone      TEXT    NOT NULL,
    job_name      TEXT    NOT NULL,
    queue         TEXT    NOT NULL,
    registered_at INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    last_fire_at  INTEGER
) WITHOUT ROWID;

PRAGMA user_version = 6;
