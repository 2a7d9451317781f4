-- A running job's progress (rota.core.progress: one JSON object), fenced by its lease like
-- every write of an attempt: only the attempt that holds the lease writes it.
UPDATE {schema}.jobs
SET progress = %(progress)s::jsonb
WHERE id = %(id)s
  AND state = 'leased'
  AND lease_owner = %(owner)s
  AND attempt = %(attempt)s
