-- The live (scheduled or leased) job holding a name and key, through rota_jobs_live_key.
SELECT id FROM rota_jobs
WHERE name = :name AND key = :key AND key IS NOT NULL AND state IN ('scheduled', 'leased');
