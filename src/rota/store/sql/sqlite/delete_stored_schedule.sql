-- Delete a stored schedule; a schedule in code keeps its row.
DELETE FROM rota_schedules WHERE name = :name AND stored = 1;
