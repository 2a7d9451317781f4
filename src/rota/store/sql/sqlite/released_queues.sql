-- The Queues of the jobs that the end of :parents (a JSON array of ids of jobs with
-- children, finished at :now) made claimable: their children now scheduled, and those of
-- the waiting children their end cancelled (the settle trigger of migration 14 ended
-- them with waiting_for 0 at the same :now), for the wake-ups of other processes.
-- Read in the finishing transaction; reads only edges of those parents (a primary-key
-- range each) and the rows they name.
WITH RECURSIVE ended(id) AS (
    SELECT value FROM json_each(:parents)
    UNION
    SELECT edge.child_id
    FROM ended
    CROSS JOIN rota_job_edges AS edge ON edge.parent_id = ended.id
    CROSS JOIN rota_jobs AS child ON child.id = edge.child_id
    WHERE child.state = 'cancelled' AND child.finished_at = :now AND child.waiting_for = 0
)
SELECT DISTINCT child.queue
FROM ended
CROSS JOIN rota_job_edges AS edge ON edge.parent_id = ended.id
CROSS JOIN rota_jobs AS child ON child.id = edge.child_id
WHERE child.state = 'scheduled';
