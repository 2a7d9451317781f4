-- Migration 22: the hint of a workflow release names where the released jobs are due.
-- {schema} is replaced by the store's schema, quoted as an identifier.
--
-- settle_children (migrations 14 and 16) woke each Queue it released children into with
-- a hint that named only the Queue. A worker's claim floor for that Queue (claim floors,
-- docs/decisions/0068) cannot tell from such a hint where the released jobs are, so it
-- removes the floor, and while a snapshot is held elsewhere the next claim walks the
-- whole claim index from its start. The hint now carries the earliest due time released
-- into each Queue (`queue <microseconds since the epoch>`, as every other statement that
-- makes jobs claimable sends it): the floor is lowered there. The function is otherwise
-- migration 16's.
CREATE OR REPLACE FUNCTION {schema}.settle_children() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    reach bigint[];
    frontier bigint[];
    states text[];
    ats timestamptz[];
    sent bigint;
BEGIN
    IF current_setting('rota.settling', true) = 'on' OR NOT EXISTS (
        SELECT 1 FROM {schema}.job_edges AS e WHERE e.parent_id = NEW.id AND e.pending
    ) THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(n.id ORDER BY n.id), array_agg(n.state ORDER BY n.id),
           array_agg(n.finished_at ORDER BY n.id)
    INTO ids, states, ats
    FROM ended_rows AS n
    WHERE n.has_children
      AND n.state IN ('succeeded', 'dead_lettered', 'quarantined', 'cancelled');
    PERFORM set_config('rota.settling', 'on', true);
    -- A parent that did not succeed may cancel children, and they theirs: lock every
    -- waiting job the whole cascade may change, in id order, before changing any (the
    -- children of the parents that ended, and below each child that may be cancelled,
    -- one that needs its parents to succeed and has children, its own children, and so
    -- on). When every parent succeeded no child is cancelled, the loop below runs one
    -- round, and its lock is already in id order.
    IF NOT ('succeeded' = ALL (states)) THEN
        -- Level by level, each a lookup by primary key (`= ANY` of an array: never a scan
        -- of the table, whatever its statistics say).
        reach := ARRAY(SELECT e.child_id FROM {schema}.job_edges AS e
                       WHERE e.parent_id = ANY (ids) AND e.pending);
        frontier := ARRAY(
            SELECT e.child_id FROM {schema}.job_edges AS e
            WHERE e.parent_id = ANY (ARRAY(
                    SELECT p.id FROM unnest(ids, states) AS p(id, state)
                    WHERE p.state <> 'succeeded'))
              AND e.pending);
        WHILE cardinality(frontier) > 0 LOOP
            frontier := ARRAY(
                SELECT e.child_id FROM {schema}.job_edges AS e
                WHERE e.parent_id = ANY (ARRAY(
                        SELECT w.id FROM {schema}.jobs AS w
                        WHERE w.id = ANY (frontier) AND w.state = 'waiting'
                          AND w.has_children AND w.after_outcome = 'succeeded'))
                  AND e.pending);
            reach := reach || frontier;
        END LOOP;
        PERFORM 1
        FROM {schema}.jobs AS c
        WHERE c.id = ANY (reach) AND c.state = 'waiting'
        ORDER BY c.id
        FOR NO KEY UPDATE;
    END IF;
    WHILE ids IS NOT NULL LOOP
        -- Lock the waiting children of this round in id order (a no-op for those locked
        -- above), so the statement below reads each at its latest version.
        PERFORM 1
        FROM {schema}.jobs AS c
        WHERE c.id = ANY (ARRAY(
                SELECT e.child_id FROM {schema}.job_edges AS e
                WHERE e.parent_id = ANY (ids) AND e.pending))
          AND c.state = 'waiting'
        ORDER BY c.id
        FOR NO KEY UPDATE;
        WITH ended AS (
            SELECT p.id, p.state, p.finished_at
            FROM unnest(ids, states, ats) AS p(id, state, finished_at)
        ),
        counted AS (
            UPDATE {schema}.job_edges AS e
            SET pending = false
            FROM ended
            WHERE e.parent_id = ended.id AND e.pending
            RETURNING e.child_id, ended.id AS parent_id, ended.state, ended.finished_at
        ),
        per_child AS (
            -- The parents that ended for each child, and the first (lowest id) of them
            -- that did not succeed.
            SELECT k.child_id, count(*) AS ended, max(k.finished_at) AS last_at,
                   (array_agg(k.parent_id ORDER BY k.parent_id)
                        FILTER (WHERE k.state <> 'succeeded'))[1] AS failed_id,
                   (array_agg(k.state ORDER BY k.parent_id)
                        FILTER (WHERE k.state <> 'succeeded'))[1] AS failed_state,
                   (array_agg(k.finished_at ORDER BY k.parent_id)
                        FILTER (WHERE k.state <> 'succeeded'))[1] AS failed_at
            FROM counted AS k
            GROUP BY k.child_id
        ),
        verdicts AS (
            SELECT pc.*, pc.failed_id IS NOT NULL AND c.after_outcome = 'succeeded'
                       AS cancel
            FROM per_child AS pc
            JOIN {schema}.jobs AS c ON c.id = pc.child_id
            WHERE c.state = 'waiting'
        ),
        settled AS (
            UPDATE {schema}.jobs AS c
            SET state = CASE WHEN v.cancel THEN 'cancelled'
                             WHEN c.waiting_for <= v.ended THEN 'scheduled'
                             ELSE 'waiting' END,
                waiting_for = CASE WHEN v.cancel THEN c.waiting_for
                                   ELSE greatest(c.waiting_for - v.ended, 0) END,
                due_at = CASE WHEN NOT v.cancel AND c.waiting_for <= v.ended
                              THEN greatest(c.due_at, v.last_at) ELSE c.due_at END,
                finished_at = CASE WHEN v.cancel THEN v.failed_at END,
                last_error = CASE WHEN v.cancel
                    THEN 'Cancelled: parent job ' || v.failed_id || ' ended '
                         || v.failed_state || ', and this job was to run only after its '
                         || 'parents succeeded (after_outcome=''succeeded'')'
                    ELSE c.last_error END,
                last_traceback = CASE WHEN v.cancel THEN NULL ELSE c.last_traceback END
            FROM verdicts AS v
            WHERE c.id = v.child_id AND c.state = 'waiting'
            RETURNING c.id, c.queue, c.state, c.finished_at, c.due_at,
                      c.state = 'cancelled' AND c.has_children AS cascades
        ),
        hints AS (
            SELECT pg_notify(TG_TABLE_SCHEMA || '_enqueue',
                             released.queue || ' ' || released.position)
            FROM (SELECT queue,
                         floor(extract(epoch FROM min(due_at)) * 1000000)::bigint AS position
                  FROM settled WHERE state = 'scheduled' GROUP BY queue) AS released
        )
        -- The next round: the children cancelled that have children of their own. The
        -- hints' count is read (an InitPlan of the one aggregate row), so they are sent.
        SELECT array_agg(s.id ORDER BY s.id) FILTER (WHERE s.cascades),
               array_agg(s.state ORDER BY s.id) FILTER (WHERE s.cascades),
               array_agg(s.finished_at ORDER BY s.id) FILTER (WHERE s.cascades),
               (SELECT count(*) FROM hints)
        INTO ids, states, ats, sent
        FROM settled AS s;
    END LOOP;
    PERFORM set_config('rota.settling', '', true);
    RETURN NULL;
END
$$;

