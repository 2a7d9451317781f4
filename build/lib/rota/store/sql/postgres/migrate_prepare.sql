-- Run under the migration advisory lock: make sure the schema and the ledger of applied
-- migrations exist. Idempotent.
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
    version     integer PRIMARY KEY,
    description text NOT NULL
);
