-- The highest migration applied (NULL: none).
SELECT max(version) FROM {schema}.schema_migrations
