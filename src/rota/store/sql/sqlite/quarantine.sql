UPDATE rota_jobs
SET state = 'quarantined', last_error = :error, last_traceback = NULL, finished_at = :now,
    lease_owner = NULL, lease_expires_at = NULL
WHERE id = :id AND state = 'leased' AND lease_owner = :owner AND attempt = :attempt;
