-- Migration 7: the worker registry, the served history and the groups it saw; and the
-- trace context an enqueue inside an OpenTelemetry span stores with the job.
--
-- rota_workers: one row per worker process, written at start, refreshed with its
-- heartbeats (never per job), deleted at a graceful stop. `dead_at` is when it counts as
-- dead unless refreshed before; rows dead for long are deleted by other workers.
-- groups: JSON [{name, kind, queues, weights, pool_size, owner}]; in_flight: JSON
-- {group: jobs}; served: JSON [[group, queue, outcome, count]] since the worker started.
CREATE TABLE rota_workers (
    id         TEXT    PRIMARY KEY,
    host       TEXT    NOT NULL,
    pid        INTEGER NOT NULL,
    version    TEXT    NOT NULL,
    started_at INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL,
    dead_at    INTEGER NOT NULL,
    groups     TEXT    NOT NULL,
    in_flight  TEXT    NOT NULL DEFAULT '{}',
    served     TEXT    NOT NULL DEFAULT '[]'
) WITHOUT ROWID;

-- Per-minute served counters (minute = start of the minute, microseconds), summed over
-- every worker; kept about a day so the fairness view outlives the workers.
CREATE TABLE rota_served (
    minute  INTEGER NOT NULL,
    grp     TEXT    NOT NULL,
    queue   TEXT    NOT NULL,
    outcome TEXT    NOT NULL,
    count   INTEGER NOT NULL,
    PRIMARY KEY (minute, grp, queue, outcome)
) WITHOUT ROWID;

-- Every Worker Group a worker registered, as last registered (its policy for the
-- fairness view of stopped workers). weights: JSON list, NULL for Strict.
CREATE TABLE rota_worker_groups (
    name      TEXT    PRIMARY KEY,
    kind      TEXT    NOT NULL,
    queues    TEXT    NOT NULL,
    weights   TEXT,
    pool_size INTEGER NOT NULL,
    seen_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- W3C trace context (JSON of the propagator's carrier) of the span an enqueue ran in;
-- NULL when none was active (or OpenTelemetry is not installed).
ALTER TABLE rota_jobs ADD COLUMN trace_context TEXT;

PRAGMA user_version = 7;
