-- The ids of a job's children, ascending (a range of rota_job_edges' primary key).
SELECT child_id FROM rota_job_edges WHERE parent_id = :id ORDER BY child_id;
