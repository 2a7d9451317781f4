-- A debounced job whose key no scheduled, never-claimed job holds (debounce_holder.sql
-- found none, under the write lock): a new job collecting the key's enqueues.
INSERT INTO rota_jobs (name, queue, due_at, args, kwargs, created_at, debounce_key,
                       trace_context, meta, expires_at)
VALUES (:name, :queue, :due_at, :args, :kwargs, :created_at, :key, :trace_context, :meta,
        :expires_at)
RETURNING id;
