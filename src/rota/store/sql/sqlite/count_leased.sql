-- How many jobs of a Queue are leased now (a family's limit binds each member on its
-- own): the partial index rota_jobs_leased.
SELECT count(*) FROM rota_jobs WHERE state = 'leased' AND queue = :queue;
