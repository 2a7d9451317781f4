-- The children of a job (enqueued after it), ascending: its edges, on their primary key.
SELECT child_id FROM {schema}.job_edges WHERE parent_id = %(id)s ORDER BY child_id
