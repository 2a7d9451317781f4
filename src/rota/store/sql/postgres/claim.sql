-- The PostgreSQL claim: one template and its parts (`-- @part`, rota/store/sql_template.py),
-- composed when a statement loads (rota/store/postgres/schema.py, CLAIMS) into:
--   claim                      Queues with no control: {wanted} is the part free;
--   claim_limited              Queues of which some are paused, limited or rated: the part
--                              room, each Queue's room (rota.core.queue_controls.room);
--   claim_completing           claim carrying a batch of successes: complete.sql as its
--   claim_completing_results   first CTE (complete_results.sql), the parts completed*.
-- A placeholder with no value, or a value no placeholder takes, raises as it loads.
--
-- Lease up to `limit` due jobs from the Queues in `queues`, in one statement:
-- the first Queue's due jobs first (due time, then id), then the next Queue's.
--
-- The LATERAL subquery is a nested loop over the Queues in the order given (ordinality);
-- each inner scan walks the partial index jobs_claimable in (due_at, id) order and locks
-- rows as the outer LIMIT pulls them, so no more than `limit` rows are ever locked.
-- SKIP LOCKED: a row another claimer is taking is passed over, never waited for.
--
-- {wanted} ends with the CTE wanted: the Queues to claim from (queue, position, and the
-- floor where each one's scan starts, rota/store/postgres/floors.py) and the most to take
-- from each (take).
WITH
{completed}
{wanted}
picked AS (
    SELECT due.id, wanted.position, due.expired
    FROM wanted
    CROSS JOIN LATERAL (
        SELECT jobs.id, jobs.expires_at < %(now)s AS expired
        FROM {schema}.jobs
        WHERE jobs.queue = wanted.queue
          AND jobs.state = 'scheduled'
          AND jobs.due_at <= %(now)s
          AND (jobs.due_at, jobs.id) >= (wanted.floor_due, wanted.floor_id)
        ORDER BY jobs.due_at, jobs.id
        LIMIT wanted.take
        FOR UPDATE SKIP LOCKED
    ) AS due
    LIMIT %(limit)s
),
-- Expiry: a picked job past its expires_at (`expired`: before `now`) is ended cancelled
-- by this same UPDATE instead of leased (docs/decisions/0071); the caller tells it by its
-- expires_at (before `now`: never so for a leased row) and reports it. For a job without
-- one, `expired` is NULL and every CASE takes its ELSE. One UPDATE, not a second one for
-- the expired rows: measured (benchmarks statement), a second UPDATE CTE cost the claim
-- ~3-4 % even when it changed nothing; the CASEs, within the noise. Ending sends the
-- finish hint (retry.sql says how); the settle trigger (migration 14) settles children.
leased AS (
    UPDATE {schema}.jobs AS jobs
    SET state = CASE WHEN picked.expired THEN 'cancelled' ELSE 'leased' END,
        attempt = CASE WHEN picked.expired THEN jobs.attempt ELSE jobs.attempt + 1 END,
        lease_owner = CASE WHEN picked.expired THEN NULL ELSE %(owner)s END,
        lease_expires_at = CASE WHEN picked.expired THEN NULL
                                ELSE %(lease_expires_at)s::timestamptz END,
        started_at = CASE WHEN picked.expired THEN jobs.started_at ELSE %(now)s END,
        finished_at = CASE WHEN picked.expired THEN (SELECT %(now)s::timestamptz
            FROM (SELECT pg_notify({finished_channel}, '')) AS hint) END,
        last_error = CASE WHEN picked.expired THEN 'Expired: not started by '
            || to_char(jobs.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC'
            ELSE jobs.last_error END,
        last_traceback = CASE WHEN picked.expired THEN NULL ELSE jobs.last_traceback END,
        worker = CASE WHEN picked.expired THEN jobs.worker ELSE %(worker)s END,
        progress = NULL
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
              jobs.created_at, jobs.trace_context, jobs.parents, jobs.meta::text AS meta,
              jobs.expires_at
)
SELECT id, name, queue, attempt, due_at, args, kwargs, last_error, created_at, trace_context,
       parents, meta, expires_at
FROM (
    SELECT * FROM leased
{limited_row}
{completed_row}
) AS claimed
ORDER BY position, due_at, id

-- @part asked
-- The Queues asked, in order (ordinality), with their counts and floors. limits: the
-- most to take from each Queue (a batched claim, one count per Queue; the store passes
-- `limit` for each when the claim gives none). floors: where each Queue's scan starts
-- (rota/store/postgres/floors.py).
unnest(%(queues)s::text[], %(limits)s::int[], %(floor_dues)s::timestamptz[],
       %(floor_ids)s::bigint[])
    WITH ORDINALITY AS w(queue, queue_limit, floor_due, floor_id, position)

-- @part free
-- claim: Queue controls are read by every claim, with no cache: a paused Queue is left
-- out. If any Queue asked for has a concurrency limit or a rate (and is not paused), the
-- claim leases nothing and returns one row of NULLs instead (the part limited_row): the
-- store then claims with lock_queue_limits.sql + claim_limited in one transaction, which
-- counts the Queue's leases under a lock. So claims over Queues without a limit stay one
-- statement, one round trip, and never lock a settings row.
--
-- controls: the settings rows that pause or limit a Queue asked for (none, almost
-- always): one index scan of the settings' primary key. Measured cheaper than a lookup
-- per Queue joined to every Queue asked (by 0.06 ms a claim: docs/decisions/0018).
--   A family's settings row ('tenant-*') controls each member asked (family_controls,
--   migration 21: a scan of the partial index of family rows, empty unless one has a
--   setting).
controls AS (
    SELECT queue_settings.queue, queue_settings.paused
    FROM {schema}.queue_settings
    WHERE queue_settings.queue = ANY (%(queues)s::text[])
      AND (queue_settings.paused OR queue_settings.concurrency_limit IS NOT NULL
           OR queue_settings.rate_jobs IS NOT NULL)
    UNION ALL
    SELECT * FROM {schema}.family_controls(%(queues)s::text[])
),
limited AS (
    SELECT 1 AS found
    FROM controls
    WHERE NOT controls.paused
    LIMIT 1
),
-- A Queue with no control has the room it asks for (rota.core.queue_controls.room of no
-- settings).
wanted AS (
    SELECT w.queue, w.position, w.queue_limit AS take, w.floor_due, w.floor_id
    FROM {asked}
    WHERE NOT EXISTS (SELECT FROM limited)
{completed_guard}
      AND NOT EXISTS (SELECT FROM controls WHERE controls.queue = w.queue)
),

-- @part limited_row
    -- The signal "a Queue has a limit": id NULL (leased is empty then).
    UNION ALL
    SELECT 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
    FROM limited

-- @part room
-- claim_limited: a claim over Queues of which some have a concurrency limit or a rate. It
-- runs in one transaction right after lock_queue_limits.sql, which locked the settings
-- rows of those Queues: any other claimer of them has committed or waits. Under READ
-- COMMITTED this statement's snapshot is taken after the lock was granted, so it counts
-- every lease committed by the claimers before it, and the count and the lease are
-- atomic. (One statement alone could not do this: its snapshot would predate the lock
-- wait.) A rated Queue's count comes capped by its tokens (`limits`, claims.py).
--
-- requested: one primary-key lookup of the settings per Queue asked for (OFFSET 0 keeps
-- the planner from turning this into a hash join over the whole settings table).
requested AS (
    SELECT w.queue, w.position, w.queue_limit, w.floor_due, w.floor_id, settings.paused,
           settings.concurrency_limit
    FROM {asked}
    LEFT JOIN LATERAL (
        SELECT queue_settings.paused, queue_settings.concurrency_limit
        FROM {schema}.queue_settings
        WHERE queue_settings.queue = w.queue
        OFFSET 0
    ) AS settings ON true
),
-- Each Queue's room: rota.core.queue_controls.room(settings, leased, wanted) with its
-- count as wanted, the one copy of that rule on PostgreSQL (tests/store/
-- test_contract_room.py checks they agree): none while it is paused; with a concurrency
-- limit, that limit less its jobs leased now, counted on the partial index
-- jobs_lease_expiry (whose rows are the leased jobs), at most up to the limit. (A LIMIT
-- of 0 reads nothing: a paused Queue's jobs are not walked.)
wanted AS (
    SELECT requested.queue, requested.position, requested.floor_due, requested.floor_id,
           CASE
               WHEN requested.paused THEN 0
               WHEN requested.concurrency_limit IS NULL
                   THEN greatest(0, requested.queue_limit)
               ELSE greatest(0, least(requested.queue_limit,
                                      requested.concurrency_limit - (
                   SELECT count(*)
                   FROM (
                       SELECT 1
                       FROM {schema}.jobs AS held
                       WHERE held.lease_expires_at IS NOT NULL
                         AND held.state = 'leased'
                         AND held.queue = requested.queue
                       -- In index order and no further than the limit: enough to know the
                       -- room, and it makes this an index scan in the generic plan, which
                       -- marks dead entries as it goes (a bitmap scan would not, and would
                       -- slow down as jobs churn; see migration 1).
                       ORDER BY held.lease_expires_at, held.id
                       LIMIT requested.concurrency_limit
                   ) AS counted
               )))
           END AS take
    FROM requested
),

-- @part completed
-- claim_completing: a claim that also completes a batch of successes, complete.sql (or
-- complete_results.sql) as its first CTE. The CTEs share one snapshot and touch
-- different rows (leased, scheduled): exactly the two statements in one transaction.
completed AS (
{complete}
    RETURNING jobs.id, jobs.has_children
),

-- @part completed_guard
-- A completed job with children settles them (migration 14) after this statement's
-- snapshot was taken, so the claim would not see a child they release: then it leases
-- nothing, and the store claims again with claim alone.
      AND NOT EXISTS (SELECT FROM completed WHERE completed.has_children)

-- @part completed_row
-- The count of completed (in attempt), as a first row: id -1, or {completed_parents} when a
-- completed job has children (the claim then leased nothing).
    UNION ALL
    SELECT -1, CASE WHEN bool_or(has_children) THEN {completed_parents} ELSE -1 END, NULL,
           NULL, count(*)::int, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
    FROM completed
