UPDATE rota_jobs
SET state = 'dead_lettered', last_error = :error, last_traceback = :traceback,
    finished_at = :now,
    lease_owner = NULL, lease_expires_at = NULL
WHERE id = :id AND state = 'leased' AND lease_owner = :owner AND attempt = :attempt;
