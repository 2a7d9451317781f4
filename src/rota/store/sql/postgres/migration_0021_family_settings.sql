-- Migration 21: settings on a Queue family. A family's settings are a row of queue_settings
-- named like the family ('tenant-*'; a Queue name never holds '*'). A member whose rate
-- or limit is its family's gets a row of its own (rate and limit NULL) that a limited claim
-- locks and whose bucket it writes (ensure_member_settings.sql). Claims find the family
-- rows on this partial index: an empty one when no family has a setting.
CREATE INDEX queue_settings_families ON {schema}.queue_settings (queue)
    WHERE right(queue, 1) = '*';

-- The members among `queues` that a family with a setting holds, with that family's pause
-- (a row per family holding it): claim.sql's part `controls` and probe.sql call it, on the
-- index above.
CREATE FUNCTION {schema}.family_controls(queues text[])
RETURNS TABLE (queue text, paused boolean)
LANGUAGE sql STABLE AS $$
    SELECT asked, families.paused
    FROM {schema}.queue_settings AS families, unnest(queues) AS asked
    WHERE right(families.queue, 1) = '*'
      AND starts_with(asked, left(families.queue, -1))
      AND (families.paused OR families.concurrency_limit IS NOT NULL
           OR families.rate_jobs IS NOT NULL)
$$;
