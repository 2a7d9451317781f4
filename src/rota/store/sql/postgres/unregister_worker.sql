-- A worker's graceful stop removes its row.
DELETE FROM {schema}.workers WHERE id = %(id)s
