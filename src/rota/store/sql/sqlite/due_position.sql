-- How many due jobs of a scheduled, due job's Queue a claim takes before it (claim order:
-- due time, then id), for the dashboard's "when will it run?". No row when the job is
-- unknown, not scheduled or not due. Walks rota_jobs_claimable over the jobs ahead.
SELECT (SELECT count(*) FROM rota_jobs AS other
        WHERE other.queue = job.queue AND other.state = 'scheduled'
          AND (other.due_at < job.due_at OR (other.due_at = job.due_at AND other.id < job.id)))
FROM rota_jobs AS job
WHERE job.id = :id AND job.state = 'scheduled' AND job.due_at <= :now;
