-- The job of a fire, due at the fire instant (same columns as enqueue.sql).
INSERT INTO rota_jobs (name, queue, due_at, args, kwargs, created_at)
VALUES (:job_name, :queue, :fire_at, :args, :kwargs, :now)
RETURNING id;
