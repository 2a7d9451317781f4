-- The raw ceiling's jobs table: the columns a job queue needs, and a partial index that
-- holds only claimable rows, so finished rows never slow a claim.
CREATE TABLE jobs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name             text        NOT NULL,
    queue            text        NOT NULL,
    state            text        NOT NULL DEFAULT 'scheduled',
    attempt          integer     NOT NULL DEFAULT 0,
    due_at           timestamptz NOT NULL,
    args             json        NOT NULL,
    lease_owner      text,
    lease_expires_at timestamptz,
    finished_at      timestamptz
);
CREATE INDEX jobs_claimable ON jobs (queue, due_at, id) WHERE state = 'scheduled';
