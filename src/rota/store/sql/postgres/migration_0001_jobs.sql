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

-- The lease sweeper reads only leased jobs, oldest expiry first.
CREATE INDEX jobs_lease_expiry ON {schema}.jobs (lease_expires_at, id) WHERE state = 'leased';

-- list_jobs(queue=...) in id order.
CREATE INDEX jobs_queue_id ON {schema}.jobs (queue, id);
