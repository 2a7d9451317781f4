UPDATE rota_jobs
SET state = 'scheduled', due_at = :due_at, last_error = :error,
    lease_owner = NULL, lease_expires_at = NULL
WHERE id = :id AND state = 'leased' AND lease_owner = :owner AND attempt = :attempt;
