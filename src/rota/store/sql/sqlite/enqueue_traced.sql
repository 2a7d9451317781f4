-- enqueue.sql with the trace context of the span the enqueue ran in (7th parameter);
-- used only when a job of the batch has one, so the common enqueue stays as it was.
INSERT INTO rota_jobs (name, queue, due_at, args, kwargs, created_at, trace_context)
VALUES (?, ?, ?, ?, ?, ?, ?);
