-- Delete the jobs purge_lock.sql locked, in the same transaction, and their edges.
--
-- A second statement, so its snapshot is taken after the lock: the enqueue of a child
-- locks its parents, so any child enqueued after a job picked here either committed
-- before (this statement sees it) or waits and then finds its parent gone. A job with a
-- child that has not finished (waiting, scheduled or leased) stays. The DELETE checks
-- state and finished_at again, so a row that left its finished state meanwhile is never
-- deleted. A deleted job's edges go with it, as a child and as a parent. ANY(ARRAY(...)): a primary-key lookup in the generic plan
-- too (see claim.sql).
WITH gone AS (
    DELETE FROM {schema}.jobs AS jobs
    WHERE jobs.id = ANY (%(ids)s::bigint[])
      AND jobs.state = ANY (%(states)s::text[])
      AND jobs.finished_at < %(finished_before)s
      AND NOT (jobs.has_children AND EXISTS (
          SELECT 1
          FROM {schema}.job_edges AS e
          JOIN {schema}.jobs AS c ON c.id = e.child_id
          WHERE e.parent_id = jobs.id AND c.state IN ('waiting', 'scheduled', 'leased')))
    RETURNING jobs.id, jobs.parents, jobs.has_children
),
-- Every edge of a deleted child has one of its parents as parent_id: the parents' ids
-- only make this a lookup of the primary key.
as_child AS (
    DELETE FROM {schema}.job_edges AS e
    WHERE e.parent_id = ANY (ARRAY(SELECT unnest(gone.parents) FROM gone
                                   WHERE gone.parents IS NOT NULL))
      AND e.child_id = ANY (ARRAY(SELECT gone.id FROM gone WHERE gone.parents IS NOT NULL))
),
as_parent AS (
    DELETE FROM {schema}.job_edges AS e
    WHERE e.parent_id = ANY (ARRAY(SELECT gone.id FROM gone WHERE gone.has_children))
)
SELECT count(*) FROM gone
