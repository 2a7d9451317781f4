-- The compare-and-set of a fire, inside the write transaction that then inserts the job
-- (fire_schedule_enqueue.sql): one row changed means this caller fires the instant. A
-- paused schedule fires nothing.
UPDATE rota_schedules
SET last_fire_at = :fire_at
WHERE name = :name
  AND definition = :definition
  AND paused = 0
  AND registered_at < :fire_at
  AND (last_fire_at IS NULL OR last_fire_at < :fire_at);
