-- Rows of workers dead for long.
DELETE FROM {schema}.workers WHERE dead_at < %(dead_before)s
