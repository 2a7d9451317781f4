-- A running job's progress (rota.core.progress: one JSON object), fenced by its lease like
-- every write of an attempt: only the attempt that holds the lease writes it.
UPDATE rota_jobs
SET progress = :progress
WHERE id = :id AND state = 'leased' AND lease_owner = :owner AND attempt = :attempt;
