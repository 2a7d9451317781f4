-- Migration 15: leader leases (LeaderStore): one row per lease name, the worker that runs
-- the store's maintenance until expires_at (take_leadership.sql). A handful of rows,
-- read and written by primary key only.
-- {schema} is replaced by the store's schema, quoted as an identifier.
CREATE TABLE {schema}.leaders (
    name       text        PRIMARY KEY,
    owner      text        NOT NULL,
    expires_at timestamptz NOT NULL
);
