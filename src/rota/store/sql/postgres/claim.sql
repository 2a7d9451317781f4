-- Lease up to `limit` due jobs from the Queues in `queues`, in one statement:
-- the first Queue's due jobs first (due time, then id), then the next Queue's.
--
-- The LATERAL subquery is a nested loop over the Queues in the order given (ordinality);
-- each inner scan walks the partial index jobs_claimable in (due_at, id) order and locks
-- rows as the outer LIMIT pulls them, so no more than `limit` rows are ever locked.
-- SKIP LOCKED: a row another claimer is taking is passed over, never waited for.
--
-- Queue controls are read here, by every claim, with no cache: a paused Queue is left
-- out. If any Queue asked for has a concurrency limit or a rate (and is not paused), this statement
-- leases nothing and returns one row of NULLs instead: the store then claims with
-- lock_queue_limits.sql + claim_limited.sql in one transaction, which counts the Queue's
-- leases under a lock. So claims over Queues without a limit stay one statement, one
-- round trip, and never lock a settings row.
--
-- claim_completing (a claim carrying a batch of successes, postgres.py `_sql_text`) is
-- this statement with complete.sql as a first CTE and its count as a first row, at the
-- three places marked "claim_completing". A completed job with children settles them
-- (migration 14) after this statement's snapshot was taken, so the claim would not see
-- a child they release: then it leases nothing, and the count row's id is -2 (else -1),
-- and the store claims again with claim.sql alone.
WITH
-- claim_completing: completed AS (complete.sql RETURNING jobs.id),
-- The settings rows that pause or limit a Queue asked for (none, almost always): one
-- index scan of the settings' primary key. Measured cheaper than a lookup per Queue
-- joined to every Queue asked (by 0.06 ms a claim: docs/decisions/0018).
controls AS (
    SELECT queue_settings.queue, queue_settings.paused
    FROM {schema}.queue_settings
    WHERE queue_settings.queue = ANY (%(queues)s::text[])
      AND (queue_settings.paused OR queue_settings.concurrency_limit IS NOT NULL
           OR queue_settings.rate_jobs IS NOT NULL)
),
limited AS (
    SELECT 1 AS found
    FROM controls
    WHERE NOT controls.paused
    LIMIT 1
),
-- limits: the most to take from each Queue (a batched claim, one count per Queue; the
-- store passes `limit` for each when the claim gives none).
wanted AS (
    SELECT w.queue, w.position, w.queue_limit, w.floor_due, w.floor_id
    -- floors: where each Queue's scan starts (rota/store/postgres/floors.py).
    FROM unnest(%(queues)s::text[], %(limits)s::int[], %(floor_dues)s::timestamptz[],
                %(floor_ids)s::bigint[])
        WITH ORDINALITY AS w(queue, queue_limit, floor_due, floor_id, position)
    WHERE NOT EXISTS (SELECT FROM limited)
      -- claim_completing: AND no completed job has children
      AND NOT EXISTS (SELECT FROM controls WHERE controls.queue = w.queue)
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
          AND (jobs.due_at, jobs.id) >= (wanted.floor_due, wanted.floor_id)
        ORDER BY jobs.due_at, jobs.id
        LIMIT wanted.queue_limit
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
              jobs.created_at, jobs.trace_context, jobs.parents
)
SELECT id, name, queue, attempt, due_at, args, kwargs, last_error, created_at, trace_context,
       parents
FROM (
    SELECT position, id, name, queue, attempt, due_at, args, kwargs, last_error, created_at,
           trace_context, parents
    FROM leased
    UNION ALL
    -- The signal "a Queue has a limit": id NULL (leased is empty then).
    SELECT 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
    FROM limited
    -- claim_completing: UNION ALL the count of completed (in attempt, id -1 or -2)
) AS claimed
ORDER BY position, due_at, id
