-- The edges of a new child (:child) to its parents (:parents, a JSON array of ids), each
-- pending while its parent has not finished (read in the same write transaction).
INSERT INTO rota_job_edges (parent_id, child_id, pending)
SELECT parent.id, :child,
       parent.state NOT IN ('succeeded', 'dead_lettered', 'quarantined', 'cancelled')
FROM json_each(:parents) AS asked
JOIN rota_jobs AS parent ON parent.id = asked.value;
