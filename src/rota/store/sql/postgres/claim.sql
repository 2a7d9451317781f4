-- Lease up to `limit` due jobs from the Queues in `queues`, in one statement:
-- the first Queue's due jobs first (due time, then id), then the next Queue's.
--
-- The LATERAL subquery is a nested loop over the Queues in the order given (ordinality);
-- each inner scan walks the partial index jobs_claimable in (due_at, id) order and locks
-- rows as the outer LIMIT pulls them, so no more than `limit` rows are ever locked.
-- SKIP LOCKED: a row another claimer is taking is passed over, never waited for.
WITH wanted AS (
    SELECT w.queue, w.position
    FROM unnest(%(queues)b::text[]) WITH ORDINALITY AS w(queue, position)
),
picked AS (
    SELECT due.id, wanted.position
    FROM wanted
    CROSS JOIN LATERAL (
        SELECT jobs.id
        FROM {schema}.jobs
        WHERE jobs.queue = wanted.queue
          AND jobs.state = 'scheduled'
          AND jobs.due_at <= %(now)s
        ORDER BY jobs.due_at, jobs.id
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    ) AS due
    LIMIT %(limit)s
),
leased AS (
    UPDATE {schema}.jobs AS jobs
    SET state = 'leased',
        attempt = jobs.attempt + 1,
        lease_owner = %(owner)s,
        lease_expires_at = %(lease_expires_at)s,
        started_at = %(now)s
    FROM picked
    -- The ANY(ARRAY(...)) is for the generic plan (the store's connections run with
    -- plan_cache_mode = force_generic_plan): it makes the row lookup a primary-key index
    -- scan whatever the unknown limit; with the join alone, the generic plan hashed a
    -- sequential scan of the whole table (35-45 ms a claim instead of ~1 ms).
    WHERE jobs.id = ANY (ARRAY(SELECT picked.id FROM picked))
      AND jobs.id = picked.id
    -- state, lease_owner, lease_expires_at and started_at are what this statement set: the
    -- caller knows them, so they are not sent back (nor result and cancel_requested: a
    -- scheduled job has neither).
    RETURNING picked.position, jobs.id, jobs.name, jobs.queue, jobs.attempt, jobs.due_at,
              jobs.args::text AS args, jobs.kwargs::text AS kwargs, jobs.last_error,
              jobs.created_at
)
SELECT id, name, queue, attempt, due_at, args, kwargs, last_error, created_at
FROM leased
ORDER BY position, due_at, id
