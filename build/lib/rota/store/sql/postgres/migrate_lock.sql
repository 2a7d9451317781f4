-- Serialise migrations between every node: held until the migrating transaction ends.
SELECT pg_advisory_xact_lock(%(lock_key)s)
