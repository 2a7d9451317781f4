-- The owner of a live leader lease, if any.
SELECT owner FROM {schema}.leaders WHERE name = %(name)s AND expires_at > %(now)s
