-- Add to the jobs of (Queue, state) pairs (migration 8): one statement for every pair a
-- write transaction changed. The rows placeholder below becomes one `(?, ?, ?)` per pair
-- (positional: queue, state, jobs; negative: fewer), joined by commas.
INSERT INTO rota_job_counts (queue, state, jobs) VALUES {rows}
ON CONFLICT (queue, state) DO UPDATE SET jobs = jobs + excluded.jobs;
