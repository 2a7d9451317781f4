-- Delete up to :limit jobs of one finished :state that finished before :finished_before,
-- through the partial index rota_jobs_finished (the literal IS NOT NULL names its
-- predicate). The caller runs it once per state inside one write transaction.
DELETE FROM rota_jobs
WHERE id IN (
    SELECT id FROM rota_jobs
    WHERE state = :state AND finished_at IS NOT NULL AND finished_at < :finished_before
    ORDER BY finished_at
    LIMIT :limit
);
