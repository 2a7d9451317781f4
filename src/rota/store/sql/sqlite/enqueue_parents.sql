-- The parents of a child being enqueued (:parents, a JSON array of ids): each is marked
-- as having children, and its state read, under the enqueue's write lock (a parent cannot
-- finish before the child and its edges are written). A parent id missing from the rows
-- is no job: the store refuses the whole batch.
UPDATE rota_jobs SET has_children = 1
WHERE id IN (SELECT value FROM json_each(:parents))
RETURNING id, state;
