-- Migration 6: schedules (periodic jobs). One row per schedule name, written when a worker
-- of an App that defines the schedule starts (register_schedules.sql) and by every fire
-- (fire_schedule.sql). {schema} is replaced by the store's schema, quoted as an identifier.
--
-- Exactly once per fire instant: a fire is one statement that moves last_fire_at forward
-- (a compare-and-set: concurrent fires of one row queue on its row lock, and the later
-- ones re-check the condition on the new row version and change nothing) and inserts the
-- job only if it did. `definition` is the digest of the schedule as the App that
-- registered it last defines it; only an App with the same digest fires it.
-- Rows are never deleted: a schedule removed from the code keeps its row, inert.
CREATE TABLE {schema}.schedules (
    name          text        PRIMARY KEY,
    definition    text        NOT NULL,
    rule          text        NOT NULL,
    timezone      text        NOT NULL,
    job_name      text        NOT NULL,
    queue         text        NOT NULL,
    registered_at timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    last_fire_at  timestamptz
);
