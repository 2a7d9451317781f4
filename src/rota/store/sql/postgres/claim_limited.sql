-- claim.sql for a claim over Queues of which some have a concurrency limit. It runs in
-- one transaction right after lock_queue_limits.sql, which locked the settings rows of
-- those Queues: any other claimer of them has committed or waits. Under READ COMMITTED
-- this statement's snapshot is taken after the lock was granted, so it counts every
-- lease committed by the claimers before it, and the count and the lease are atomic.
-- (One statement alone could not do this: its snapshot would predate the lock wait.)
--
-- Each Queue's room is rota.core.queue_controls.room: its limit less its jobs leased
-- now (walking the partial index jobs_lease_expiry, whose rows are the leased jobs, and
-- counting at most up to the limit), or `limit` for a Queue without a limit; a paused
-- Queue is left out.
WITH requested AS (
    SELECT w.queue, w.position, w.queue_limit, w.floor_due, w.floor_id, settings.paused,
           settings.concurrency_limit
    -- limits: the most to take from each Queue (a batched claim, one count per Queue;
    -- the store passes `limit` for each when the claim gives none).
    -- floors: where each Queue's scan starts (rota/store/postgres/floors.py).
    FROM unnest(%(queues)s::text[], %(limits)s::int[], %(floor_dues)s::timestamptz[],
                %(floor_ids)s::bigint[])
        WITH ORDINALITY AS w(queue, queue_limit, floor_due, floor_id, position)
    -- One primary-key lookup per Queue asked for (OFFSET 0 keeps the planner from
    -- turning this into a hash join over the whole settings table).
    LEFT JOIN LATERAL (
        SELECT queue_settings.paused, queue_settings.concurrency_limit
        FROM {schema}.queue_settings
        WHERE queue_settings.queue = w.queue
        OFFSET 0
    ) AS settings ON true
),
wanted AS (
    SELECT requested.queue, requested.position, requested.queue_limit,
           requested.floor_due, requested.floor_id,
           CASE
               WHEN requested.concurrency_limit IS NULL THEN %(limit)s
               ELSE greatest(0, requested.concurrency_limit - (
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
               ))
           END AS room
    FROM requested
    WHERE requested.paused IS NOT TRUE
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
        LIMIT least(wanted.room, wanted.queue_limit)
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
    -- ANY(ARRAY(...)): a primary-key lookup in the generic plan too (see claim.sql).
    WHERE jobs.id = ANY (ARRAY(SELECT picked.id FROM picked))
      AND jobs.id = picked.id
    RETURNING picked.position, jobs.id, jobs.name, jobs.queue, jobs.attempt, jobs.due_at,
              jobs.args::text AS args, jobs.kwargs::text AS kwargs, jobs.last_error,
              jobs.created_at, jobs.trace_context, jobs.parents
)
SELECT id, name, queue, attempt, due_at, args, kwargs, last_error, created_at, trace_context,
       parents
FROM leased
ORDER BY position, due_at, id
