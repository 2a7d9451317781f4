-- How many due jobs of a scheduled, due job's Queue a claim takes before it (claim order:
-- due time, then id), for the dashboard's "when will it run?". No row when the job is
-- unknown, not scheduled or not due. Walks jobs_claimable over the jobs ahead.
SELECT (SELECT count(*) FROM {schema}.jobs AS other
        WHERE other.queue = job.queue AND other.state = 'scheduled'
          AND (other.due_at, other.id) < (job.due_at, job.id))
FROM {schema}.jobs AS job
WHERE job.id = %(id)s AND job.state = 'scheduled' AND job.due_at <= %(now)s
