-- One job of a batch in which some job has meta (`configure(meta=...)`): enqueue_expiring.sql
-- with the meta column (NULL: none); executemany'd like it.
INSERT INTO rota_jobs (name, queue, due_at, args, kwargs, created_at, trace_context,
                       expires_at, meta)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?);
