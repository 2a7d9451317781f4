-- Cancel a job only while it is scheduled.
UPDATE {schema}.jobs
SET state = 'cancelled', finished_at = %(now)s
WHERE id = %(id)s AND state = 'scheduled'
