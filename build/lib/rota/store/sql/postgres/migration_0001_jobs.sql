-- Migration 1: the jobs table and the indexes that keep claims and sweeps fast.
-- {schema} is replaced by the store's schema, quoted as an identifier.

CREATE TABLE {schema}.jobs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name             text        NOT NULL,
    queue            text        NOT NULL,
    state            text        NOT NULL DEFAULT 'scheduled'
        CHECK (state IN ('scheduled', 'leased', 'succeeded', 'dead_lettered',
                         'quarantined', 'cancelled')),
    attempt          integer     NOT NULL DEFAULT 0,
    due_at           timestamptz NOT NULL,
    args             json        NOT NULL,
    kwargs           json        NOT NULL,
    last_error       text,
    created_at       timestamptz NOT NULL,
    finished_at      timestamptz,
    lease_owner      text,
    lease_expires_at timestamptz,
    CHECK ((state = 'leased') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL))
);

-- Claims read only scheduled jobs, in (queue, due_at, id) order: finished rows, however
-- many, never enter this index.
CREATE INDEX jobs_claimable ON {schema}.jobs (queue, due_at, id) WHERE state = 'scheduled';

-- The lease sweeper reads only leased jobs, oldest expiry first. The predicate is on
-- lease_expires_at, not on state, on purpose: an index whose predicate is
-- "state = 'leased'" tempts the planner into bitmap scans for the fenced outcome writes
-- (complete, release, ...), and bitmap scans never mark dead index entries, so those
-- writes slow down with every job drained until the next vacuum. Outcome writes must go
-- by primary key. (Only leased jobs have a lease expiry: see the CHECK above.)
CREATE INDEX jobs_lease_expiry ON {schema}.jobs (lease_expires_at, id)
    WHERE lease_expires_at IS NOT NULL;

-- No other index, on purpose: a claim and an outcome each rewrite the row with a new state,
-- which PostgreSQL cannot do as a HOT update, so every index costs a write per job and
-- state change (measured: a (queue, id) index for list_jobs cost a fifth of drain throughput).
-- list_jobs and count_jobs are admin reads and scan.
