UPDATE rota_jobs SET state = 'cancelled' WHERE id = :id AND state = 'scheduled';
