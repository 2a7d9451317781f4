-- One job of a batch that has keys (a batch without keys uses enqueue.sql): inserted,
-- giving its id, unless a live job of the same name and key exists (then no row: the
-- store reads that job's id with live_key_id.sql). A NULL key never conflicts.
INSERT INTO rota_jobs (name, queue, due_at, args, kwargs, created_at, key, trace_context,
                       meta, expires_at)
VALUES (:name, :queue, :due_at, :args, :kwargs, :created_at, :key, :trace_context, :meta,
        :expires_at)
ON CONFLICT (name, key) WHERE key IS NOT NULL AND state IN ('scheduled', 'leased')
DO NOTHING
RETURNING id;
