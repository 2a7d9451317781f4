-- Delete a stored schedule; a schedule in code keeps its row.
DELETE FROM {schema}.schedules WHERE name = %(name)s AND stored
