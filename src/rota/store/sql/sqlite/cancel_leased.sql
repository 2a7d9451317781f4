-- End a leased job whose cancel was requested, fenced by its lease.
UPDATE rota_jobs
SET state = 'cancelled', last_error = :error, last_traceback = NULL, finished_at = :now,
    lease_owner = NULL, lease_expires_at = NULL
WHERE id = :id AND state = 'leased' AND lease_owner = :owner AND attempt = :attempt;
