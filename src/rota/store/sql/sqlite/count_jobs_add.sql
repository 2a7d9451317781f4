-- Add to the jobs of a (Queue, state) (migration 8). Positional: 1 queue, 2 state, 3 jobs
-- (negative: fewer).
INSERT INTO rota_job_counts (queue, state, jobs) VALUES (?, ?, ?)
ON CONFLICT (queue, state) DO UPDATE SET jobs = jobs + excluded.jobs;
