-- Migration 14: workflows, jobs enqueued after other jobs (rota.core.workflows).
-- {schema} is replaced by the store's schema, quoted as an identifier.
--
-- A child keeps its parents (in the order given), what it waits for (after_outcome) and
-- how many parents have not finished yet (waiting_for, meaningful while it is waiting);
-- all NULL for a job without parents. A parent is marked has_children by the enqueue of
-- its first child, and job_edges holds one row per (parent, child): pending while that
-- parent's end has not been counted for that child. Nullable columns and a constant
-- default: no row is rewritten.
ALTER TABLE {schema}.jobs
    ADD COLUMN parents bigint[],
    ADD COLUMN after_outcome text,
    ADD COLUMN waiting_for integer,
    ADD COLUMN has_children boolean NOT NULL DEFAULT false;

-- The state CHECK admits 'waiting'. NOT VALID: the rows there already passed the old,
-- narrower CHECK, so scanning them again (minutes on a big table, under this migration's
-- lock) would prove nothing; every row written from now on is checked.
ALTER TABLE {schema}.jobs
    DROP CONSTRAINT jobs_state_check,
    ADD CONSTRAINT jobs_state_check
        CHECK (state IN ('waiting', 'scheduled', 'leased', 'succeeded', 'dead_lettered',
                         'quarantined', 'cancelled')) NOT VALID;

-- No foreign keys: a key on jobs would add a lookup of this table to every delete of a
-- job (retention); purge.sql deletes a job's edges itself.
CREATE TABLE {schema}.job_edges (
    parent_id bigint  NOT NULL,
    child_id  bigint  NOT NULL,
    pending   boolean NOT NULL,
    PRIMARY KEY (parent_id, child_id)
);

-- The settle step, run by the transaction that moves a parent into a finished state
-- (whatever statement does it: an outcome, a claim carrying outcomes, a cancel, a lease
-- expiry). For each waiting child of the parents that ended, on their pending edges:
-- one parent less to wait for, and at none left the child is scheduled, due at the later
-- of its due time and the parent's finished_at; or, if it needed them to succeed and one
-- did not, it is cancelled at that parent's finished_at, last_error naming it (the text of
-- rota.core.workflows.parent_failed_error). Those edges stop being pending, so a parent
-- that is requeued and finishes again is not counted twice.
--
-- Row trigger, but one settle per statement: the first row's call reads the statement's
-- transition table and settles the children of every parent the statement ended, so it
-- locks all of them in id order (settling parent by parent, two batches of outcomes that
-- share children could lock them in opposite orders and deadlock). The later rows' calls
-- find their edges settled and return after one index lookup.
--
-- The cascade (a cancelled child settling its own children) is a loop, one level per
-- round, not a recursion of this trigger: a chain of a thousand jobs cancelled at once
-- would nest the trigger a thousand deep and pass max_stack_depth. While the loop runs,
-- the transaction-local setting rota.settling is on, and the calls of this trigger for
-- the children it cancels return at once.
--
-- A child released to scheduled wakes its Queue's workers: pg_notify on the channel and
-- with the payload the enqueue statements use (<schema>_enqueue, the Queue), delivered
-- when the transaction commits.
CREATE FUNCTION {schema}.settle_children() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
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
    WHILE ids IS NOT NULL LOOP
        -- Lock the waiting children first, in id order (see above), so the statement
        -- below reads each at its latest version.
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
            RETURNING c.id, c.queue, c.state, c.finished_at,
                      c.state = 'cancelled' AND c.has_children AS cascades
        ),
        hints AS (
            SELECT pg_notify(TG_TABLE_SCHEMA || '_enqueue', released.queue)
            FROM (SELECT DISTINCT queue FROM settled WHERE state = 'scheduled') AS released
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

-- WHEN keeps the cost to every other job's update (claims, heartbeats, outcomes) to a
-- test of has_children on the new row: no call, nothing queued.
CREATE TRIGGER jobs_settle_children AFTER UPDATE ON {schema}.jobs
    REFERENCING NEW TABLE AS ended_rows
    FOR EACH ROW
    WHEN (NEW.has_children
          AND NEW.state IN ('succeeded', 'dead_lettered', 'quarantined', 'cancelled')
          AND OLD.state NOT IN ('succeeded', 'dead_lettered', 'quarantined', 'cancelled'))
    EXECUTE FUNCTION {schema}.settle_children();
