SELECT queue, state, count(*) FROM rota_jobs GROUP BY queue, state;
