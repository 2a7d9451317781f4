UPDATE rota_jobs SET state = 'cancelled', finished_at = :now
WHERE id = :id AND state = 'scheduled';
