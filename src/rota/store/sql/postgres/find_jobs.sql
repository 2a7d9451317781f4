-- find_jobs (ascending ids, past the id `beyond`) and find_jobs_newest (descending,
-- before it), composed by sql_base.by_id_both_ways: keyset paging (the bulk actions walk
-- their jobs with find_jobs), filtered by Queue, state, job name and meta (NULL: any).
-- meta: the jobs whose meta holds every key of the filter with an equal value. @> is
-- what the GIN index jobs_meta answers (migration 17), but it also takes an array that
-- holds the wanted items, or an object that holds the wanted members, as containing
-- them: the NOT EXISTS then keeps only equal values (jsonb equality: strict types,
-- numbers by value), the rule of rota.core.meta.
-- Planned each run (PLANNED_EACH_RUN): the NULL filters fold away and a meta filter
-- meets the index. The ids are chosen first, then their rows read: the planner weighs
-- the choice on ids alone (with the whole row, a rare meta value came to walk the
-- primary key backwards over the table instead of asking the index).
SELECT id, name, queue, state, attempt, due_at, args::text, kwargs::text, last_error,
       created_at, lease_owner, lease_expires_at, started_at, result::text,
       cancel_requested, finished_at, key, last_traceback, parents, meta::text,
       snoozes, expires_at,
       progress::text, errors::text, worker, after_outcome
FROM {schema}.jobs
WHERE id IN (
    SELECT id
    FROM {schema}.jobs
    WHERE (%(beyond)s::bigint IS NULL OR id {beyond} %(beyond)s::bigint)
      AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
      AND (%(state)s::text IS NULL OR state = %(state)s::text)
      AND (%(name)s::text IS NULL OR name = %(name)s::text)
      AND (%(meta)s::jsonb IS NULL OR (
          meta @> %(meta)s::jsonb
          AND NOT EXISTS (SELECT FROM jsonb_each(%(meta)s::jsonb) AS wanted
                          WHERE meta -> wanted.key <> wanted.value)))
    ORDER BY id {order}
    LIMIT %(limit)s
)
ORDER BY id {order}
