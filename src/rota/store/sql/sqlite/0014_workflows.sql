-- Migration 14: workflows, jobs enqueued after other jobs (rota.core.workflows).
--
-- Columns of the job (nullable, or a constant default: SQLite rewrites no rows to add them):
-- after_outcome: NULL without parents, else 'succeeded' or 'finished'. waiting_for: NULL
-- without parents; how many of its parents had not finished at its enqueue (1 or more for
-- a job that starts 'waiting'); set to 0 when the settling below ends its wait (scheduled
-- or cancelled), and left as it was when `cancel` ends a waiting job by hand (see the
-- trigger's WHEN). It is not counted down as parents finish: SQLite reads and re-encodes
-- the whole row for every UPDATE, overflow pages included, so a count kept on the child's
-- row made each parent's end cost the length of the child's `parents`: quadratic in a
-- fan-in (30,000 parents re-encoded a 180 KB row 30,000 times). How many parents a
-- waiting job still waits for is how many of its edges are pending (below).
-- has_children: 1 once a job was named as a parent (set by the child's enqueue, in its
-- transaction); the settle trigger and purge.sql look no further for a job without it.
-- parents: the ids of the jobs it was enqueued after, a JSON array in the order given
-- ("[3,1]"); NULL for a job without parents. Added last: it may be long (a fan-in), and
-- a column stored after it is read through its overflow pages.
ALTER TABLE rota_jobs ADD COLUMN after_outcome TEXT;
ALTER TABLE rota_jobs ADD COLUMN waiting_for INTEGER;
ALTER TABLE rota_jobs ADD COLUMN has_children INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rota_jobs ADD COLUMN parents TEXT;

-- One edge per (parent, child). pending: 1 while the parent's end has not been counted
-- for that child; an edge to a parent already finished at the child's enqueue is inserted
-- with 0. A parent requeued after it finished finds none of its edges pending when it
-- finishes again: its end counts once for each child. A waiting child is released when
-- none of its edges is pending: rota_job_edges_waiting finds its pending edges by child,
-- so that test is one index seek however many parents the child has, and a parent's end
-- writes its own edges (and their entries in that index), never the child's row until
-- the child's wait ends.
CREATE TABLE rota_job_edges (
    parent_id INTEGER NOT NULL,
    child_id  INTEGER NOT NULL,
    pending   INTEGER NOT NULL,
    PRIMARY KEY (parent_id, child_id)
) WITHOUT ROWID;

CREATE INDEX rota_job_edges_waiting ON rota_job_edges (child_id) WHERE pending;

-- One trigger for every change of a job's state, which migration 8's count trigger was,
-- with as small a program: SQLite runs a row trigger's WHEN inside the trigger's program,
-- and every claimed and every completed job calls the program of each trigger on UPDATE
-- OF state, whose cost grows with the program (its registers are set up and released at
-- each call; measured in docs/investigations/workflow-settling.md). So this one only
-- counts and hands a parent to settle to the triggers below (rota_jobs_settle_succeeded,
-- rota_jobs_settle), through a row of rota_job_settling.
--
-- The count (migration 8, as it was): every change of state but the two hot ones, which
-- the store counts itself, and but the moves out of 'waiting' that the settling makes
-- (waiting -> scheduled, and waiting -> cancelled with waiting_for 0), which it counts
-- itself.
--
-- The settle step: every change of a parent into a finished state, by any statement of
-- rota's or by hand (which must set finished_at, as every rota statement does), settles
-- its waiting children in the same transaction. Ordinary jobs pay the WHEN's test of
-- has_children (0). A waiting job ended by the settling (waiting_for 0) is left out: the
-- settling of its ancestor settled its children already.
DROP TRIGGER rota_jobs_count_moved;

CREATE TRIGGER rota_jobs_moved AFTER UPDATE OF state ON rota_jobs
WHEN (OLD.state <> NEW.state
      AND NOT (OLD.state = 'scheduled' AND NEW.state = 'leased')
      AND NOT (OLD.state = 'leased' AND NEW.state = 'succeeded')
      AND NOT (OLD.state = 'waiting' AND (NEW.state = 'scheduled' OR NEW.waiting_for = 0)))
  OR (NEW.has_children
      AND NEW.state IN ('succeeded', 'dead_lettered', 'quarantined', 'cancelled')
      AND OLD.state NOT IN ('succeeded', 'dead_lettered', 'quarantined', 'cancelled')
      AND (OLD.state <> 'waiting' OR NEW.waiting_for > 0))
BEGIN
    UPDATE rota_job_counts SET jobs = jobs - 1
    WHERE queue = OLD.queue AND state = OLD.state
      AND OLD.state <> NEW.state
      AND NOT (OLD.state = 'scheduled' AND NEW.state = 'leased')
      AND NOT (OLD.state = 'leased' AND NEW.state = 'succeeded')
      AND NOT (OLD.state = 'waiting' AND (NEW.state = 'scheduled' OR NEW.waiting_for = 0));
    INSERT INTO rota_job_counts (queue, state, jobs)
    SELECT NEW.queue, NEW.state, 1
    WHERE OLD.state <> NEW.state
      AND NOT (OLD.state = 'scheduled' AND NEW.state = 'leased')
      AND NOT (OLD.state = 'leased' AND NEW.state = 'succeeded')
      AND NOT (OLD.state = 'waiting' AND (NEW.state = 'scheduled' OR NEW.waiting_for = 0))
    ON CONFLICT (queue, state) DO UPDATE SET jobs = jobs + 1;

    INSERT INTO rota_job_settling (id, state, finished_at)
    SELECT NEW.id, NEW.state, NEW.finished_at
    WHERE NEW.has_children
      AND NEW.state IN ('succeeded', 'dead_lettered', 'quarantined', 'cancelled')
      AND OLD.state NOT IN ('succeeded', 'dead_lettered', 'quarantined', 'cancelled')
      AND (OLD.state <> 'waiting' OR NEW.waiting_for > 0);
END;

-- The settling of one parent: NEW is a row of rota_job_settling (the parent's id, the
-- finished state it entered, its finished_at), written by rota_jobs_moved and deleted at
-- the end of the trigger that settles it: rota_jobs_settle_succeeded for a parent that
-- succeeded, rota_jobs_settle for any other end (the table is empty outside them).
--
-- A job waits only while one of its edges is pending: it starts waiting only with a
-- parent not finished, and the settling that clears its last pending edge schedules or
-- cancels it. So a waiting child with no pending edge left, among the children of the
-- jobs whose edges a settling just cleared, is one whose wait that settling ended:
-- walking every edge out of those jobs, pending or not, finds each such child once, and
-- rota_job_edges_waiting answers "any pending edge left?" with one seek. A child that
-- still waits is read (its state, that seek) and never written. A released child is
-- scheduled due at the later of its own due time and the parent's finished_at, with
-- waiting_for 0, and counted first (waiting -1, scheduled +1).
--
-- A success, the common end, settles the parent's own children in a trigger of its own,
-- without the recursive queries, GROUP BY and DISTINCT of the cascade below: every
-- temporary b-tree a statement opens (those, and an UPDATE of several rows) gets a page
-- cache of its own, and on a connection whose temporary store is a file (SQLite's default)
-- freeing it can hand its memory back to the system, for the next one to fault in afresh
-- (up to a millisecond a settled parent: docs/investigations/workflow-settling.md).
CREATE TABLE rota_job_settling (
    id          INTEGER PRIMARY KEY,
    state       TEXT    NOT NULL,
    finished_at INTEGER NOT NULL
);

CREATE TRIGGER rota_jobs_settle_succeeded AFTER INSERT ON rota_job_settling
WHEN NEW.state = 'succeeded'
BEGIN
    UPDATE rota_job_edges SET pending = 0 WHERE parent_id = NEW.id AND pending;

    INSERT INTO rota_job_counts (queue, state, jobs)
    SELECT child.queue, 'waiting', -1
    FROM rota_job_edges AS edge
    CROSS JOIN rota_jobs AS child ON child.id = edge.child_id
    WHERE edge.parent_id = NEW.id AND child.state = 'waiting'
      AND NOT EXISTS (SELECT 1 FROM rota_job_edges AS other
                      WHERE other.child_id = child.id AND other.pending)
    ON CONFLICT (queue, state) DO UPDATE SET jobs = jobs - 1;

    INSERT INTO rota_job_counts (queue, state, jobs)
    SELECT child.queue, 'scheduled', 1
    FROM rota_job_edges AS edge
    CROSS JOIN rota_jobs AS child ON child.id = edge.child_id
    WHERE edge.parent_id = NEW.id AND child.state = 'waiting'
      AND NOT EXISTS (SELECT 1 FROM rota_job_edges AS other
                      WHERE other.child_id = child.id AND other.pending)
    ON CONFLICT (queue, state) DO UPDATE SET jobs = jobs + 1;

    UPDATE rota_jobs
    SET state = 'scheduled', waiting_for = 0, due_at = max(due_at, NEW.finished_at)
    FROM rota_job_edges AS edge
    WHERE edge.parent_id = NEW.id AND rota_jobs.id = edge.child_id
      AND rota_jobs.state = 'waiting'
      AND NOT EXISTS (SELECT 1 FROM rota_job_edges AS other
                      WHERE other.child_id = rota_jobs.id AND other.pending);

    DELETE FROM rota_job_settling WHERE id = NEW.id;
END;

-- Any other end settles the whole cascade in one firing, whatever its depth: `ended` is
-- the parent with the waiting descendants its end cancels (children that needed every
-- parent to succeed, and theirs in turn, through waiting jobs only), found by one
-- recursive query. Then:
-- 1. the edges out of `ended` are no longer pending;
-- 2. every waiting child of `ended` that runs whatever happened (after_outcome
--    'finished') and has no pending edge left is scheduled, as above;
-- 3. the cancelled descendants end at the parent's finished_at, last_error naming the
--    parent whose end cancelled each (the lowest id when several did): the text of
--    rota.core.workflows.parent_failed_error (counted first), and waiting_for 0, which
--    rota_jobs_moved leaves out.
-- Each statement walks the same `ended`: 1 changes only edges, 2 only children that go on
-- (never one the walk passes through), and 3 does not read `pending`. Every walk seeks
-- the edges of the jobs it has, then each child by id (CROSS JOIN fixes that order: the
-- planner otherwise may take the children from an index of their state).
--
-- So no trigger needs to fire from its own action, and nothing depends on
-- PRAGMA recursive_triggers or on SQLITE_MAX_TRIGGER_DEPTH (1000): a connection with or
-- without recursive triggers (rota's, a caller's `enqueue_on` connection, the sqlite3
-- shell) settles a chain of any length in one firing, three triggers deep at most, and
-- counts it once (with them on, the rows it changes fire rota_jobs_moved again, whose
-- conditions leave them out).
CREATE TRIGGER rota_jobs_settle AFTER INSERT ON rota_job_settling
WHEN NEW.state <> 'succeeded'
BEGIN
    UPDATE rota_job_edges SET pending = 0
    WHERE pending AND parent_id IN (
        WITH RECURSIVE ended(id) AS (
            SELECT NEW.id
            UNION
            SELECT edge.child_id
            FROM ended
            CROSS JOIN rota_job_edges AS edge ON edge.parent_id = ended.id
            CROSS JOIN rota_jobs AS child ON child.id = edge.child_id
            WHERE child.state = 'waiting' AND child.after_outcome = 'succeeded'
        )
        SELECT id FROM ended
    );

    INSERT INTO rota_job_counts (queue, state, jobs)
    SELECT child.queue, moved.state, moved.sign * count(*)
    FROM (
        WITH RECURSIVE ended(id) AS (
            SELECT NEW.id
            UNION
            SELECT edge.child_id
            FROM ended
            CROSS JOIN rota_job_edges AS edge ON edge.parent_id = ended.id
            CROSS JOIN rota_jobs AS child ON child.id = edge.child_id
            WHERE child.state = 'waiting' AND child.after_outcome = 'succeeded'
        )
        SELECT DISTINCT edge.child_id AS id
        FROM ended CROSS JOIN rota_job_edges AS edge ON edge.parent_id = ended.id
    ) AS settled
    CROSS JOIN rota_jobs AS child ON child.id = settled.id
    CROSS JOIN (SELECT 'waiting' AS state, -1 AS sign
                UNION ALL SELECT 'scheduled', 1) AS moved
    WHERE child.state = 'waiting' AND child.after_outcome = 'finished'
      AND NOT EXISTS (SELECT 1 FROM rota_job_edges AS other
                      WHERE other.child_id = child.id AND other.pending)
    GROUP BY child.queue, moved.state
    ON CONFLICT (queue, state) DO UPDATE SET jobs = jobs + excluded.jobs;

    UPDATE rota_jobs
    SET state = 'scheduled', waiting_for = 0, due_at = max(due_at, NEW.finished_at)
    FROM (
        WITH RECURSIVE ended(id) AS (
            SELECT NEW.id
            UNION
            SELECT edge.child_id
            FROM ended
            CROSS JOIN rota_job_edges AS edge ON edge.parent_id = ended.id
            CROSS JOIN rota_jobs AS child ON child.id = edge.child_id
            WHERE child.state = 'waiting' AND child.after_outcome = 'succeeded'
        )
        SELECT DISTINCT edge.child_id AS id
        FROM ended CROSS JOIN rota_job_edges AS edge ON edge.parent_id = ended.id
    ) AS settled
    WHERE rota_jobs.id = settled.id AND rota_jobs.state = 'waiting'
      AND rota_jobs.after_outcome = 'finished'
      AND NOT EXISTS (SELECT 1 FROM rota_job_edges AS other
                      WHERE other.child_id = rota_jobs.id AND other.pending);

    INSERT INTO rota_job_counts (queue, state, jobs)
    SELECT child.queue, moved.state, moved.sign * count(*)
    FROM (
        WITH RECURSIVE doomed(id, cause) AS (
            SELECT edge.child_id, NEW.id
            FROM rota_job_edges AS edge
            CROSS JOIN rota_jobs AS child ON child.id = edge.child_id
            WHERE edge.parent_id = NEW.id
              AND child.state = 'waiting' AND child.after_outcome = 'succeeded'
            UNION
            SELECT edge.child_id, doomed.id
            FROM doomed
            CROSS JOIN rota_job_edges AS edge ON edge.parent_id = doomed.id
            CROSS JOIN rota_jobs AS child ON child.id = edge.child_id
            WHERE child.state = 'waiting' AND child.after_outcome = 'succeeded'
        )
        SELECT DISTINCT id FROM doomed
    ) AS doomed
    CROSS JOIN rota_jobs AS child ON child.id = doomed.id
    CROSS JOIN (SELECT 'waiting' AS state, -1 AS sign
                UNION ALL SELECT 'cancelled', 1) AS moved
    WHERE true
    GROUP BY child.queue, moved.state
    ON CONFLICT (queue, state) DO UPDATE SET jobs = jobs + excluded.jobs;

    UPDATE rota_jobs
    SET state = 'cancelled', finished_at = NEW.finished_at, waiting_for = 0,
        last_error = 'Cancelled: parent job ' || doomed.cause || ' ended '
            || CASE WHEN doomed.cause = NEW.id THEN NEW.state ELSE 'cancelled' END
            || ', and this job was to run only after its parents succeeded '
            || '(after_outcome=''succeeded'')',
        last_traceback = NULL
    FROM (
        WITH RECURSIVE doomed(id, cause) AS (
            SELECT edge.child_id, NEW.id
            FROM rota_job_edges AS edge
            CROSS JOIN rota_jobs AS child ON child.id = edge.child_id
            WHERE edge.parent_id = NEW.id
              AND child.state = 'waiting' AND child.after_outcome = 'succeeded'
            UNION
            SELECT edge.child_id, doomed.id
            FROM doomed
            CROSS JOIN rota_job_edges AS edge ON edge.parent_id = doomed.id
            CROSS JOIN rota_jobs AS child ON child.id = edge.child_id
            WHERE child.state = 'waiting' AND child.after_outcome = 'succeeded'
        )
        SELECT id, min(cause) AS cause FROM doomed GROUP BY id
    ) AS doomed
    WHERE rota_jobs.id = doomed.id;

    DELETE FROM rota_job_settling WHERE id = NEW.id;
END;

-- Deleting a job (purge, retention, by hand) deletes its edges: as a parent by parent_id,
-- as a child through its parents list (one primary-key seek each). purge.sql deletes no
-- job while a child of it has not finished.
CREATE TRIGGER rota_jobs_edges_deleted AFTER DELETE ON rota_jobs
WHEN OLD.has_children OR OLD.parents IS NOT NULL
BEGIN
    DELETE FROM rota_job_edges WHERE OLD.has_children AND parent_id = OLD.id;
    DELETE FROM rota_job_edges
    WHERE parent_id IN (SELECT value FROM json_each(OLD.parents)) AND child_id = OLD.id;
END;

PRAGMA user_version = 14;
