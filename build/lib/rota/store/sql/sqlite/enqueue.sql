-- Positional parameters (executemany with tuples is the fastest bulk path):
-- 1 name, 2 queue, 3 due_at, 4 args, 5 kwargs, 6 created_at.
INSERT INTO rota_jobs (name, queue, due_at, args, kwargs, created_at)
VALUES (?, ?, ?, ?, ?, ?);
