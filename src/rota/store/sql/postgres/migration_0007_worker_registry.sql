-- Migration 7: the worker registry, the served history and the groups it saw; and the
-- trace context an enqueue inside an OpenTelemetry span stores with the job.
-- {schema} is replaced by the store's schema, quoted as an identifier.
--
-- workers: one row per worker process, written at start, refreshed with its heartbeats
-- (never per job), deleted at a graceful stop. `dead_at` is when it counts as dead unless
-- refreshed before; rows dead for long are deleted by other workers.
-- groups: JSON list of objects (name, kind, queues, weights, pool_size, owner);
-- in_flight: JSON object group -> jobs; served: JSON [[group, queue, outcome, count]]
-- since the worker started. (Other braces must be doubled: the {schema} formatting reads them.)
CREATE TABLE {schema}.workers (
    id         text        PRIMARY KEY,
    host       text        NOT NULL,
    pid        integer     NOT NULL,
    version    text        NOT NULL,
    started_at timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL,
    dead_at    timestamptz NOT NULL,
    groups     text        NOT NULL,
    in_flight  text        NOT NULL DEFAULT '{{}}',
    served     text        NOT NULL DEFAULT '[]'
);

-- Per-minute served counters, summed over every worker; kept about a day so the
-- fairness view outlives the workers.
CREATE TABLE {schema}.served (
    minute  timestamptz NOT NULL,
    grp     text        NOT NULL,
    queue   text        NOT NULL,
    outcome text        NOT NULL,
    count   bigint      NOT NULL,
    PRIMARY KEY (minute, grp, queue, outcome)
);

-- Every Worker Group a worker registered, as last registered (its policy for the
-- fairness view of stopped workers). weights: JSON list, NULL for Strict.
CREATE TABLE {schema}.worker_groups (
    name      text        PRIMARY KEY,
    kind      text        NOT NULL,
    queues    text        NOT NULL,
    weights   text,
    pool_size integer     NOT NULL,
    seen_at   timestamptz NOT NULL
);

-- W3C trace context (JSON of the propagator's carrier) of the span an enqueue ran in;
-- NULL when none was active (or OpenTelemetry is not installed).
ALTER TABLE {schema}.jobs ADD COLUMN trace_context text;
