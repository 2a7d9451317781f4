"""What a store's own storage says about the queue's health ahead of time: on PostgreSQL,
what holds back vacuum (the xmin horizon) and the dead rows of rota's tables; on SQLite,
the size of the write-ahead log a reader keeps from being checkpointed.

A held snapshot does no harm at once: dead row versions pile up in the hot tables, every
claim walks over more of them, and pickup times climb by the minute (28x the median
after three minutes of a transaction held open at 500 jobs/s, before claim floors). So
the operator is told while it is still cheap to act. The store
reads the numbers in one query (`StorageReporting.storage_health`, rota.store.base); this
module turns them into sentences, with the limits as parameters (tests use small ones).
One source, three readers: `rota health` and `/healthz` (rota.app.status), the dashboard's
page and its `/metrics` gauges.

Pure: no I/O, no clock (the store computes ages on the database's own clock).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rota.core.durations import short_duration

# A held snapshot this old is worth a warning: minutes of dead rows behind the claim index.
HORIZON_AGE_S = 300.0
# A holder whose age in seconds the store cannot tell (another user's backend whose
# transaction start PostgreSQL hides, a replication slot before PostgreSQL 17) is judged
# by its age in transactions instead: at a busy queue's thousand or so transactions a
# second, about as many minutes as HORIZON_AGE_S.
HORIZON_AGE_XIDS = 300_000
# Dead rows above live ones, and at least this many: a table vacuum cannot keep clean.
DEAD_ROWS_FLOOR = 10_000
# A -wal file this big is one no checkpoint could fold back for a long while.
WAL_BYTES = 64 * 2**20
QUERY_CHARS = 100


@dataclass(frozen=True, slots=True)
class HorizonHolder:
    """One thing that holds back the xmin horizon: a backend, a replication slot or a
    prepared transaction.

    Attributes:
        kind: "backend", "replication slot" or "prepared transaction".
        name: its pid (a backend), slot name or global transaction id.
        age_s: seconds it has held the horizon (a backend: since its transaction
            started; a prepared transaction: since it was prepared; a slot: since it went
            inactive, PostgreSQL 17+); None when the server does not tell.
        age_xids: the age of the xid it holds, in transactions (None: not known).
        application: a backend's application_name; a slot's type and plugin.
        state: a backend's state (e.g. "idle in transaction"); a slot's active or not.
        started_at: a backend's transaction start or a prepared transaction's prepare time.
        query: the first characters of a backend's last query ("" when hidden).
        database: the database it is in (None: cluster-wide, e.g. a physical slot).
    """

    kind: str
    name: str
    age_s: float | None = None
    age_xids: int | None = None
    application: str = ""
    state: str = ""
    started_at: datetime | None = None
    query: str = ""
    database: str | None = None


@dataclass(frozen=True, slots=True)
class TableRows:
    """One of rota's tables, with the live and dead row counts the statistics keep."""

    table: str
    live: int
    dead: int


@dataclass(frozen=True, slots=True)
class StorageHealth:
    """What one `storage_health()` call read.

    Attributes:
        holders: what holds back the xmin horizon (PostgreSQL), oldest first.
        tables: rota's tables with their live and dead rows (PostgreSQL).
        wal_file: the -wal file (SQLite); None for a store without one.
        wal_bytes: its size in bytes (0 when it does not exist).
        has_horizon: the store has an xmin horizon (PostgreSQL), so `holders` and the
            ages mean something even when empty.
    """

    holders: tuple[HorizonHolder, ...] = ()
    tables: tuple[TableRows, ...] = ()
    wal_file: str | None = None
    wal_bytes: int | None = None
    has_horizon: bool = False

    @property
    def horizon_age_s(self) -> float:
        """The oldest holder's age in seconds, of those whose age is known (0: none)."""
        return max((h.age_s for h in self.holders if h.age_s is not None), default=0.0)

    @property
    def horizon_age_xids(self) -> int:
        """The oldest holder's age in transactions, of those whose age is known (0: none)."""
        return max((h.age_xids for h in self.holders if h.age_xids is not None), default=0)


@dataclass(frozen=True, slots=True)
class StorageLimits:
    """Where a warning starts (defaults: the module's constants)."""

    horizon_age_s: float = HORIZON_AGE_S
    horizon_age_xids: int = HORIZON_AGE_XIDS
    dead_rows_floor: int = DEAD_ROWS_FLOOR
    wal_bytes: int = WAL_BYTES


def _held_too_long(holder: HorizonHolder, limits: StorageLimits) -> bool:
    if holder.age_s is not None:
        return holder.age_s >= limits.horizon_age_s
    return holder.age_xids is not None and holder.age_xids >= limits.horizon_age_xids


def _age(holder: HorizonHolder) -> str:
    parts = []
    if holder.age_s is not None:
        parts.append(f"for {short_duration(holder.age_s)}")
    if holder.age_xids is not None:
        parts.append(f"{holder.age_xids:,} transactions old")
    return ", ".join(parts)


def describe_holder(holder: HorizonHolder) -> str:
    """One line naming the holder, for an operator who must find and end it."""
    if holder.kind == "backend":
        what = [f"backend pid {holder.name}"]
        if holder.application:
            what.append(f"application {holder.application!r}")
        if holder.state:
            what.append(f"state {holder.state!r}")
        if holder.started_at is not None:
            what.append(f"transaction started {holder.started_at.isoformat(timespec='seconds')}")
        query = " ".join(holder.query.split())[:QUERY_CHARS]
        what.append(f"query {query!r}" if query else "query hidden (not your role's: "
                    "pg_read_all_stats shows it)")
        remedy = f"end it with SELECT pg_terminate_backend({holder.name})"
    elif holder.kind == "replication slot":
        what = [f"replication slot {holder.name!r}"]
        if holder.application:
            what.append(holder.application)
        if holder.state:
            what.append(holder.state)
        remedy = (f"advance its consumer, or drop it: SELECT pg_drop_replication_slot("
                  f"'{holder.name}')")
    else:
        what = [f"prepared transaction {holder.name!r}"]
        if holder.started_at is not None:
            what.append(f"prepared {holder.started_at.isoformat(timespec='seconds')}")
        remedy = f"COMMIT PREPARED or ROLLBACK PREPARED '{holder.name}'"
    if holder.database:
        what.append(f"database {holder.database!r}")
    return f"{', '.join(what)} ({_age(holder)}): {remedy}"


def storage_warnings(health: StorageHealth, limits: StorageLimits | None = None
                     ) -> tuple[str, ...]:
    """The warnings `health` calls for, one sentence each (empty: none)."""
    limits = limits or StorageLimits()
    warnings = []
    held = [holder for holder in health.holders if _held_too_long(holder, limits)]
    if held:
        names = "; ".join(describe_holder(holder) for holder in held)
        age = f"{health.horizon_age_xids:,} transactions old"
        if health.horizon_age_s > 0:
            age = f"{short_duration(health.horizon_age_s)} and {age}"
        warnings.append(
            f"the xmin horizon is held back ({age}), so vacuum cannot remove the "
            f"dead rows of rota's tables and claims slow down as they pile up; held by "
            f"{names}")
    for table in health.tables:
        if table.dead > table.live and table.dead >= limits.dead_rows_floor:
            warnings.append(
                f"table {table.table} carries more dead rows than live ones "
                f"({table.dead:,} dead, {table.live:,} live): vacuum is not keeping up or "
                "the xmin horizon is held back; claims walk over the dead rows")
    if health.wal_bytes is not None and health.wal_bytes > limits.wal_bytes:
        warnings.append(
            f"the write-ahead log {health.wal_file} is {health.wal_bytes / 2**20:.0f} MiB "
            f"(over {limits.wal_bytes / 2**20:.0f} MiB): a reader has kept a transaction "
            "open so long that no checkpoint could fold it back; end that reader (a "
            "long-running read, a backup tool, an sqlite3 shell left inside BEGIN) and the "
            "workers' next checkpoints restart it")
    return tuple(warnings)
