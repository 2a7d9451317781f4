-- History buckets older than the retention of the served history.
DELETE FROM {schema}.served WHERE minute < %(before)s
