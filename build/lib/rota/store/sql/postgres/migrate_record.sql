INSERT INTO {schema}.schema_migrations (version, description)
VALUES (%(version)s, %(description)s)
