-- Delete up to :limit jobs of one finished :state that finished before :finished_before,
-- through the partial index rota_jobs_finished (the literal IS NOT NULL names its
-- predicate). The caller runs it once per state inside one write transaction.
-- A job with a child that has not finished (waiting, scheduled or leased) stays (a job
-- without children is not looked further at); the edges of a deleted job go with it
-- (migration 14's delete trigger).
DELETE FROM rota_jobs
WHERE id IN (
    SELECT id FROM rota_jobs
    WHERE state = :state AND finished_at IS NOT NULL AND finished_at < :finished_before
      AND NOT (has_children AND EXISTS (
          SELECT 1 FROM rota_job_edges AS edge
          CROSS JOIN rota_jobs AS child ON child.id = edge.child_id
          WHERE edge.parent_id = rota_jobs.id
            AND child.state IN ('waiting', 'scheduled', 'leased')))
    ORDER BY finished_at
    LIMIT :limit
);
