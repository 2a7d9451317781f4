-- enqueue.sql for a batch with an expiry (configure(expires=...)): with each job's trace
-- context (NULL outside a span) and expires_at (NULL: never expires), positional.
INSERT INTO rota_jobs (name, queue, due_at, args, kwargs, created_at, trace_context,
                       expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);
