-- Migration 20: settings on a Queue family. A family's settings are a row of
-- rota_queue_settings named like the family ('tenant-*'; a Queue name never holds '*').
-- A member whose rate is its family's keeps its own bucket in a row of its own, with
-- rate_jobs NULL (take_queue_tokens.sql makes it). Claims read the family rows
-- (family_settings.sql) on this partial index: an empty one when no family has a setting.
CREATE INDEX rota_queue_settings_families ON rota_queue_settings (queue)
    WHERE queue GLOB '*[*]';

PRAGMA user_version = 20;
