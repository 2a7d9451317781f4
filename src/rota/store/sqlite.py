"""The `sqlite:///path.db` store: the embedded default, for one host and many processes.

Owns the SQLite connection, the schema and its versioned migrations (`PRAGMA
user_version`), and the mapping between rows and `JobRecord`s. Every query and every
migration lives in `sql/sqlite/<name>.sql`, loaded by name; only transaction control
(`BEGIN IMMEDIATE`, `COMMIT`, `ROLLBACK`) is spelled in this file.

Theory of operation:
- Times are INTEGER microseconds since the Unix epoch (UTC), always passed in (`now`).
- Every write runs in `BEGIN IMMEDIATE`: it takes SQLite's single write lock up front, so
  a claim's read and update are one atomic step across threads and processes, and waiting
  for the lock goes through the busy timeout rather than failing mid-transaction.
- One connection per store object, guarded by one lock (docs/stores.md gives the reasons
  and the measurements). Rows are decoded into records outside the lock.

Imports only the standard library, the pure core and the store contract.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import operator
import os
import re
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs

from rota.core.jobs import (
    CANCELLED_ON_REQUEST,
    JobRecord,
    JobState,
    Lease,
    NewJob,
    check_new_jobs,
    check_requeueable,
    decode_arguments,
    decode_result,
    decode_stored_arguments,
    new_record,
)
from rota.core.outcomes import Cancelled, DeadLettered, RetryAt, Succeeded
from rota.core.queue_controls import (
    QueueInfo,
    QueueSettings,
    build_queue_infos,
    validate_queue_limit,
)
from rota.core.queues import validate_queue_name
from rota.core.retention import purgeable_states
from rota.core.schedules import FireOutcome, ScheduleRegistration, ScheduleRow
from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo, minute_of
from rota.store.base import (
    Claimed,
    LeaseOutcome,
    Renewal,
    SchemaTooNew,
    StoreConfigError,
    StoreError,
    check_outcomes,
    claim_caps,
    listing_statement,
)
from rota.store.corrupt import quarantine_undecodable
from rota.store.registry_rows import (
    group_from_columns,
    groups_from_json,
    groups_json,
    in_flight_json,
    policy_columns,
    served_from_json,
    served_json,
)
from rota.store.sqlite_wake import WakeListener, WakeSender, wake_directory

log = logging.getLogger(__name__)

EXPECTED_FORM = "expected sqlite:///relative/path.db or sqlite:////absolute/path.db"
DEFAULT_BUSY_TIMEOUT_S = 5.0
MINIMUM_SQLITE = (3, 35, 0)  # UPDATE ... RETURNING

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_STATES = {state.value: state for state in JobState}
_MIGRATION_FILE = re.compile(r"(\d{4})_[a-z0-9_]+\.sql")
# A row as every SELECT/RETURNING of a whole job gives it, in this column order:
# id, name, queue, state, attempt, due_at, args, kwargs, last_error, created_at,
# lease_owner, lease_expires_at, started_at, result, cancel_requested, finished_at
# (and key, on the read paths: get_job, list_jobs, find_expired_leases).
_Row = tuple[Any, ...]


# -- SQL files ----------------------------------------------------------------------------


def _sql_folder() -> Any:
    return files("rota.store") / "sql" / "sqlite"


@cache
def _sql(name: str) -> str:
    """The text of `sql/sqlite/<name>.sql`."""
    return str((_sql_folder() / f"{name}.sql").read_text(encoding="utf-8"))


# claim_many.sql: at most this many Queues in one statement (SQLite allows 500 arms in a
# compound SELECT); a round asking more runs claim.sql Queue after Queue.
_MAX_ARMS = 200
# A probe of at least this many Queues first walks the Queues that have scheduled jobs
# (probe_scan.sql); a smaller one (a claim's own Queues) seeks each Queue it names.
_PROBE_SCAN_FROM = 200
_PROBE_SCAN_SHARE = 8  # ... and walks at most 1/8 of that many Queues
# The parameter names of claim_many.sql's arms, by arm (built once, not per Queue asked).
_ARM_KEYS: Final = tuple((f"queue_{index}", f"limit_{index}") for index in range(_MAX_ARMS))


@functools.cache
def _claim_many_sql(count: int) -> str:
    """claim_many.sql with `count` arms (claim_many_arm.sql, its `_N` names numbered)."""
    arm = _sql("claim_many_arm").strip()
    arms = "\nUNION ALL\n".join(
        arm.replace(":queue_N", f":queue_{index}").replace(":limit_N", f":limit_{index}")
        for index in range(count))
    return _sql("claim_many").replace("{arms}", arms)


def _statements(script: str) -> list[str]:
    """Split a script into complete statements (SQLite's own tokenizer decides)."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    leftover = [ln for ln in pending.splitlines() if ln.strip() and not ln.strip().startswith("--")]
    if leftover:
        raise ValueError(f"SQL script ends with an incomplete statement: {pending.strip()!r}")
    return statements


@dataclass(frozen=True, slots=True)
class _Migration:
    version: int
    name: str
    statements: tuple[str, ...]


@cache
def _migrations() -> tuple[_Migration, ...]:
    """Every migration, in version order; versions run 1, 2, 3, ... with no gap."""
    found: list[_Migration] = []
    for entry in _sql_folder().iterdir():
        match = _MIGRATION_FILE.fullmatch(entry.name)
        if match is not None:
            script = entry.read_text(encoding="utf-8")
            found.append(_Migration(int(match[1]), entry.name, tuple(_statements(script))))
    found.sort(key=lambda migration: migration.version)
    versions = [migration.version for migration in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"SQLite migrations must be numbered 1, 2, 3, ...; found {versions}")
    return tuple(found)


def schema_version_known() -> int:
    """The newest schema version this rota knows."""
    return _migrations()[-1].version


# -- times ----------------------------------------------------------------------------------


def _us(moment: datetime) -> int:
    if moment.tzinfo is None:
        raise ValueError(
            f"times must be timezone-aware UTC datetimes; got naive {moment!r}. "
            "Use datetime(..., tzinfo=UTC) or the App's clock"
        )
    return (moment - _EPOCH) // _MICROSECOND


def _at(microseconds: int) -> datetime:
    return _EPOCH + timedelta(microseconds=microseconds)


def _record(row: _Row, times: dict[int, datetime] | None = None) -> JobRecord:
    """The record of `row`. `times`, shared by the rows of one batch, memoises the
    microseconds -> datetime conversions: jobs enqueued together share their due and
    creation times, and a claim's rows share their lease expiry (~4 % of a drain)."""
    (job_id, name, queue, state, attempt, due_at, args_json, kwargs_json, last_error,
     created_at, lease_owner, lease_expires_at, started_at, result, cancel_requested,
     finished_at) = row[:16]
    key = row[16] if len(row) > 16 else None  # read paths add the unique-job key
    if times is None:
        times = {}
    args, kwargs, arguments_error = decode_stored_arguments(args_json, kwargs_json)
    if (due := times.get(due_at)) is None:
        due = times[due_at] = _at(due_at)
    if (created := times.get(created_at)) is None:
        created = times[created_at] = _at(created_at)
    expires: datetime | None = None
    if lease_expires_at is not None and (expires := times.get(lease_expires_at)) is None:
        expires = times[lease_expires_at] = _at(lease_expires_at)
    started: datetime | None = None
    if started_at is not None and (started := times.get(started_at)) is None:
        started = times[started_at] = _at(started_at)
    return JobRecord(
        id=job_id, name=name, queue=queue, state=_STATES[state], attempt=attempt,
        due_at=due, args=args, kwargs=kwargs, last_error=last_error,
        created_at=created, lease_owner=lease_owner, lease_expires_at=expires,
        started_at=started, result=decode_result(result),
        cancel_requested=bool(cancel_requested),
        arguments_error=arguments_error,
        finished_at=None if finished_at is None else _at(finished_at),
        key=key,
    )


def _claimed(row: _Row, owner: str, expires: datetime, started: datetime,
             times: dict[int, datetime]) -> JobRecord:
    """The record of a row the claim just leased (claim.sql's RETURNING columns): what the
    claim set comes from its parameters rather than back from the row."""
    (job_id, name, queue, attempt, due_at, args_json, kwargs_json, last_error, created_at,
     result, cancel_requested, finished_at, trace_context) = row
    args, kwargs, arguments_error = decode_stored_arguments(args_json, kwargs_json)
    if (due := times.get(due_at)) is None:
        due = times[due_at] = _at(due_at)
    if (created := times.get(created_at)) is None:
        created = times[created_at] = _at(created_at)
    return new_record(
        job_id, name, queue, JobState.LEASED, attempt, due, args, kwargs, last_error,
        created, None if finished_at is None else _at(finished_at), owner, expires, started,
        None if result is None else decode_result(result), bool(cancel_requested),
        arguments_error, None, trace_context,
    )


def _is_busy(error: sqlite3.Error) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(error) or "busy" in str(error)


def _enqueue_rows(jobs: Sequence[NewJob], now: datetime) -> list[tuple[object, ...]]:
    """The rows enqueue.sql inserts, after the checks every store makes (nothing is
    written when one job is refused)."""
    check_new_jobs(jobs)  # the same jobs refused on every store
    created_at = _us(now)
    rows: list[tuple[object, ...]] = []
    for job in jobs:
        decode_arguments(job.args_json, job.kwargs_json)  # bad JSON fails before writing
        rows.append(
            (job.name, job.queue, _us(job.due_at), job.args_json, job.kwargs_json, created_at)
        )
    if any(job.trace_context is not None for job in jobs):  # enqueued inside a span
        rows = [(*row, job.trace_context) for row, job in zip(rows, jobs, strict=True)]
    return rows


# count_jobs_add.sql: at most this many (Queue, state) pairs in one statement (3 parameters
# each, within SQLite's 999 on every version rota supports).
_MAX_COUNTED_PAIRS = 300


@functools.cache
def _count_jobs_sql(pairs: int) -> str:
    """count_jobs_add.sql with `pairs` rows of values."""
    return _sql("count_jobs_add").replace("{rows}", ", ".join(["(?, ?, ?)"] * pairs))


# complete.sql: at most this many leases in one statement (4 parameters each, and the
# finish time: within SQLite's 999 on every version rota supports).
_MAX_COMPLETED = 200


@functools.cache
def _complete_sql(leases: int, results: bool) -> str:
    """complete.sql with `leases` rows of values; without `results`, each row's result is
    the literal NULL, not a bound None (binding None costs the sqlite3 module two failed
    attribute lookups, ~4k instructions: it looks for an adapter)."""
    width = 4 if results else 3
    return _sql("complete").replace("{rows}", ", ".join(
        f"(?{n}, ?{n + 1}, ?{n + 2}, {f'?{n + 3}' if results else 'NULL'})"
        for n in range(2, 2 + width * leases, width)))


def _count_jobs(conn: sqlite3.Connection | sqlite3.Cursor,
                changes: Mapping[tuple[str, str], int]) -> None:
    """Add `changes` (jobs per (Queue, state value)) to the counts of migration 8, in the
    caller's write transaction, in one statement (per 300 pairs). The hot statements
    (enqueue, claim, complete, a schedule's fire) count themselves with it, once per
    transaction; the triggers of migration 8 count every other change."""
    values = [value for (queue, state), jobs in changes.items() if jobs
              for value in (queue, state, jobs)]
    step = 3 * _MAX_COUNTED_PAIRS
    for start in range(0, len(values), step):
        chunk = values[start:start + step]
        conn.execute(_count_jobs_sql(len(chunk) // 3), chunk)


def _move(changes: dict[tuple[str, str], int], queue: str, jobs: int,
          from_state: str, to_state: str) -> None:
    """Add to `changes` the move of `jobs` jobs of `queue` from one state to another."""
    if jobs:
        changes[(queue, from_state)] = changes.get((queue, from_state), 0) - jobs
        changes[(queue, to_state)] = changes.get((queue, to_state), 0) + jobs


_queue_of: Final = operator.attrgetter("queue")
# claim.sql's rows in due order (due_at, id): a C key, no Python call per row.
_due_order: Final = operator.itemgetter(4, 0)


def _insert_jobs(conn: sqlite3.Connection | sqlite3.Cursor, rows: list[tuple[object, ...]],
                 jobs: Sequence[NewJob]) -> list[int]:
    """Insert `rows` (of `jobs`) inside the caller's write transaction; their ids in
    order. A keyed job whose name and key a live job holds is not inserted: its id is that
    job's (an earlier job of the same batch included). Rows with a 7th column (a trace
    context) go through enqueue_traced.sql, the rest as before."""
    if all(job.key is None for job in jobs):
        traced = bool(rows) and len(rows[0]) == 7
        conn.executemany(_sql("enqueue_traced" if traced else "enqueue"), rows)
        _count_jobs(conn, {(queue, "scheduled"): count
                           for queue, count in Counter(map(_queue_of, jobs)).items()})
        (last_id,) = conn.execute(_sql("last_insert_id")).fetchone()
        # AUTOINCREMENT under the write lock hands one batch consecutive ids.
        return list(range(last_id - len(rows) + 1, last_id + 1))
    ids: list[int] = []
    inserted: Counter[tuple[str, str]] = Counter()
    insert, live = _sql("enqueue_keyed"), _sql("live_key_id")
    for row, job in zip(rows, jobs, strict=True):
        name, queue, due_at, args, kwargs, created_at = row[:6]
        params = {"name": name, "queue": queue, "due_at": due_at, "args": args,
                  "kwargs": kwargs, "created_at": created_at, "key": job.key,
                  "trace_context": job.trace_context}
        row = conn.execute(insert, params).fetchone()
        if row is None:  # the write lock is held: the live job cannot finish meanwhile
            row = conn.execute(live, {"name": name, "key": job.key}).fetchone()
        else:
            inserted[(job.queue, "scheduled")] += 1
        ids.append(int(row[0]))
    _count_jobs(conn, inserted)
    return ids


# -- the store ------------------------------------------------------------------------------


class SQLiteStore:
    """The `Store` contract on one SQLite file, shared safely by threads and processes.

    Args:
        path: the database file; created (with its directory's -wal and -shm neighbours)
            if missing. Its directory must exist.
        busy_timeout_s: how long a write waits for another connection's write lock
            before giving up with `StoreError`. Default 5 s.
        url: the URL to name in messages; default `sqlite:///<path>`.
        read_only: open the file read-only, for commands that only read: never creates,
            migrates or writes it (not even its -wal/-shm neighbours when the directory
            is read-only), so it works on a file of mode 0444 or in a read-only
            directory. Writes raise `StoreError`.

    Raises:
        StoreConfigError: the path cannot be a database file (directory missing, or a
            directory itself; with `read_only`, a file that does not exist), or
            `busy_timeout_s` is not a non-negative number.
        StoreError: SQLite is older than 3.35, the file cannot be opened or is not a
            database, or it stayed locked longer than the busy timeout while migrating;
            with `read_only`, its schema is not this rota's (run `rota migrate`).
        SchemaTooNew: the file was migrated by a newer rota.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        url: str | None = None,
        read_only: bool = False,
    ) -> None:
        self._path = os.fspath(path)
        self._read_only = read_only
        self._url = url if url is not None else f"sqlite:///{self._path}"
        if not isinstance(busy_timeout_s, int | float) or not (
            math.isfinite(busy_timeout_s) and busy_timeout_s >= 0
        ):
            raise StoreConfigError(
                f"store URL {self._url!r}: busy_timeout_s must be a number of seconds >= 0; "
                f"got {busy_timeout_s!r}, e.g. ?busy_timeout_s=5 ({EXPECTED_FORM})"
            )
        self._busy_timeout_s = float(busy_timeout_s)
        _require_sqlite_with_returning()
        self._lock = threading.Lock()
        self._applied_at_open: list[int] = []
        self._conn: sqlite3.Connection | None = (
            self._open_read_only() if read_only else self._open()
        )
        # Cross-process wake-ups (issue 14, sqlite_wake.py): a read-only store never
        # enqueues, so it sends nothing.
        self._wake: WakeSender | None = (
            None if read_only else WakeSender(wake_directory(self._path))
        )

    @classmethod
    def from_url(cls, url: str, *, read_only: bool = False) -> SQLiteStore:
        """Open the store `url` names: `sqlite:///relative/path.db` (relative to the working
        directory) or `sqlite:////absolute/path.db`; optional `?busy_timeout_s=SECONDS`.
        `read_only`: see the class.

        Raises:
            StoreConfigError: the URL is malformed; the message names it and the form.
        """
        prefix = "sqlite:///"
        if not isinstance(url, str) or url[: len(prefix)].lower() != prefix:
            raise StoreConfigError(f"store URL {url!r} is not a SQLite URL; {EXPECTED_FORM}")
        path, _, query = url[len(prefix):].partition("?")
        if not path or path.endswith("/"):
            raise StoreConfigError(f"store URL {url!r} names no database file; {EXPECTED_FORM}")
        if path == ":memory:" or path.startswith("file:"):
            raise StoreConfigError(
                f"store URL {url!r}: in-memory and file: URIs are not supported; "
                f"{EXPECTED_FORM}, or memory:// for a store that is not durable"
            )
        busy_timeout_s = DEFAULT_BUSY_TIMEOUT_S
        try:
            options = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
        except ValueError:
            options = {"": [query]}
        for key, values in options.items():
            if key != "busy_timeout_s" or len(values) != 1:
                raise StoreConfigError(
                    f"store URL {url!r}: unknown option {key!r}; the only option is "
                    f"?busy_timeout_s=SECONDS ({EXPECTED_FORM})"
                )
            try:
                busy_timeout_s = float(values[0])
            except ValueError:
                raise StoreConfigError(
                    f"store URL {url!r}: busy_timeout_s must be a number of seconds; "
                    f"got {values[0]!r} ({EXPECTED_FORM})"
                ) from None
        return cls(path, busy_timeout_s=busy_timeout_s, url=url, read_only=read_only)

    @property
    def url(self) -> str:
        return self._url

    @property
    def path(self) -> str:
        return self._path

    @property
    def read_only(self) -> bool:
        return self._read_only

    def __repr__(self) -> str:
        return f"SQLiteStore({self._path!r})"

    # -- opening and migrating --------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        where = Path(self._path)
        if where.is_dir():
            raise StoreConfigError(
                f"store URL {self._url!r} names a directory, not a database file; "
                f"{EXPECTED_FORM}"
            )
        parent = where.parent if str(where.parent) else Path(".")
        if not parent.is_dir():
            raise StoreConfigError(
                f"store URL {self._url!r}: directory {str(parent.resolve())!r} does not exist; "
                f"create it first ({EXPECTED_FORM})"
            )
        try:
            conn = sqlite3.connect(
                self._path, timeout=self._busy_timeout_s, isolation_level=None,
                check_same_thread=False,  # used from many threads, always under self._lock
            )
        except sqlite3.Error as error:
            raise StoreError(f"cannot open SQLite store {self._url!r}: {error}") from error
        try:
            with self._translate("opening"):
                for statement in _statements(_sql("connection_pragmas")):
                    result = self._pragma(conn, statement)
                    if "journal_mode" in statement and (result is None or result[0] != "wal"):
                        raise StoreError(
                            f"SQLite store {self._url!r}: could not switch the file to WAL "
                            f"mode (got {result!r}); put it on a local file system"
                        )
                self._applied_at_open = self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _pragma(self, conn: sqlite3.Connection, statement: str) -> tuple[object, ...] | None:
        """Run one connection pragma. Switching a fresh file to WAL needs an exclusive lock,
        and when several processes open a fresh file at once SQLite may answer "database
        is locked" at once, without its busy handler (two lock upgrades would deadlock):
        retry that for up to the busy timeout."""
        deadline = time.monotonic() + self._busy_timeout_s
        while True:
            try:
                row: tuple[object, ...] | None = conn.execute(statement).fetchone()
                return row
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)

    def _read_only_uri(self, *, immutable: bool) -> str:
        uri = f"{Path(self._path).resolve().as_uri()}?mode=ro"
        return f"{uri}&immutable=1" if immutable else uri

    def _open_read_only(self) -> sqlite3.Connection:
        """A read-only connection (see the class), checked to hold this rota's schema."""
        where = Path(self._path)
        if where.is_dir():
            raise StoreConfigError(
                f"store URL {self._url!r} names a directory, not a database file; "
                f"{EXPECTED_FORM}"
            )
        if not where.exists():
            raise StoreConfigError(
                f"store URL {self._url!r}: file {str(where.resolve())!r} does not exist; "
                "read-only commands never create a store. Check the path (workers and "
                f"`rota migrate` create it) ({EXPECTED_FORM})"
            )
        try:
            conn = self._connect_read_only(immutable=False)
        except sqlite3.Error as error:
            # In a read-only directory SQLite cannot create the -shm file it needs to read
            # a WAL file. With no -wal file beside the database, every commit is in the
            # database itself and nobody can be writing (a writer needs the -wal file, and
            # cannot create it either): read the file as immutable.
            if Path(f"{self._path}-wal").exists():
                raise StoreError(
                    f"cannot open SQLite store {self._url!r} read-only: {error}. Its "
                    "directory holds a -wal file this user cannot share; read it as the "
                    "user that runs the workers"
                ) from error
            try:
                conn = self._connect_read_only(immutable=True)
            except sqlite3.Error as second:
                raise StoreError(
                    f"cannot open SQLite store {self._url!r} read-only: {second}"
                ) from second
        try:
            with self._translate("opening read-only"):
                known = schema_version_known()
                version = self._check_version(conn, known)
                if version != known:
                    raise StoreError(
                        f"SQLite store {self._url!r} has schema version {version}, this rota "
                        f"reads version {known}; read-only commands do not migrate. Run "
                        f"`rota migrate --store {self._url}` (or start a worker) first"
                        if version else
                        f"SQLite file {self._url!r} holds no rota store (schema version 0); "
                        "check the path"
                    )
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect_read_only(self, *, immutable: bool) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._read_only_uri(immutable=immutable), uri=True, timeout=self._busy_timeout_s,
            isolation_level=None, check_same_thread=False,
        )
        try:
            conn.execute(_sql("schema_version")).fetchone()  # opening is lazy: read once
        except BaseException:
            conn.close()
            raise
        return conn

    def schema_version(self) -> int:
        """The file's schema version (PRAGMA user_version)."""
        with self._read("reading the schema version") as conn:
            return self._schema_version(conn)

    def migrate(self) -> list[int]:
        """Apply the migrations the file lacks; return the versions applied by this store
        object (opening the store already migrates, so this reports what opening did).

        Raises:
            SchemaTooNew: if the file was migrated by a newer rota.
            StoreError: if the store was opened read-only and the file needs migrating.
        """
        with self._read("migrating") as conn:
            applied = self._applied_at_open + self._migrate(conn)
        self._applied_at_open = []
        return applied

    def _schema_version(self, conn: sqlite3.Connection) -> int:
        row = conn.execute(_sql("schema_version")).fetchone()
        return int(row[0])

    def _migrate(self, conn: sqlite3.Connection) -> list[int]:
        """Bring the schema up to date; return the versions applied. Safe when many
        processes open a fresh file at once: the version is re-read under the write lock,
        so each migration runs exactly once."""
        known = schema_version_known()
        if self._check_version(conn, known) == known:
            return []  # the common case: no write lock taken
        applied: list[int] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = self._check_version(conn, known)
            for migration in _migrations()[version:]:
                for statement in migration.statements:
                    conn.execute(statement)
                if self._schema_version(conn) != migration.version:
                    raise RuntimeError(
                        f"migration {migration.name} must end with "
                        f"PRAGMA user_version = {migration.version};"
                    )
                applied.append(migration.version)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return applied

    def _check_version(self, conn: sqlite3.Connection, known: int) -> int:
        version = self._schema_version(conn)
        if version > known:
            raise SchemaTooNew(
                f"SQLite store {self._url!r} has schema version {version}, but this rota "
                f"knows versions up to {known}: it was migrated by a newer rota. "
                "Upgrade rota to use this file"
            )
        return version

    # -- transactions and errors --------------------------------------------------------------

    @contextmanager
    def _translate(self, doing: str) -> Iterator[None]:
        """Turn sqlite3 errors into StoreError naming the file and what was being done."""
        try:
            yield
        except sqlite3.Error as error:
            if _is_busy(error):
                raise StoreError(
                    f"SQLite store {self._url!r} was busy: another connection held its "
                    f"write lock for longer than the busy timeout ({self._busy_timeout_s:g} s) "
                    f"while {doing}; nothing was written. Retry, raise ?busy_timeout_s=, or "
                    "find the process holding a long transaction"
                ) from error
            raise StoreError(f"SQLite store {self._url!r}: {doing} failed: {error}") from error

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(
                f"SQLite store {self._url!r} is closed; open a new one with open_store(url)"
            )
        return self._conn

    @contextmanager
    def _write(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it commits, or none of it does."""
        if self._read_only:
            raise StoreError(
                f"SQLite store {self._url!r} was opened read-only; {doing} needs a writable "
                "store: open it without read_only"
            )
        with self._lock, self._translate(doing):
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    @contextmanager
    def _read(self, doing: str) -> Iterator[sqlite3.Connection]:
        with self._lock, self._translate(doing):
            yield self._connection()

    # -- writes -----------------------------------------------------------------------------

    def enqueue(self, jobs: Sequence[NewJob], now: datetime) -> list[int]:
        if not jobs:
            return []
        rows = _enqueue_rows(jobs, now)
        with self._write("enqueueing") as conn:
            ids = _insert_jobs(conn, rows, jobs)
        self._wake_others()
        return ids

    def claim(
        self,
        queues: Sequence[str],
        limit: int,
        *,
        now: datetime,
        owner: str,
        lease_expires_at: datetime,
        limits: Sequence[int] | None = None,
        probe: Sequence[str] = (),
        outcomes: Sequence[LeaseOutcome] = (),
    ) -> Claimed:
        caps = claim_caps(queues, limit, limits)
        check_outcomes(outcomes)
        if (limit <= 0 or not caps) and not outcomes:
            if not probe:
                return Claimed()
            with self._read("probing Queues") as conn:
                return Claimed(due=self._probe(conn, probe, now))
        expires_us = _us(lease_expires_at)
        params: dict[str, object] = {
            "now": _us(now), "owner": owner, "lease_expires_at": expires_us,
        }
        claim_sql = _sql("claim")
        claimed: list[_Row] = []
        due: list[str] = []
        controlled: list[str] = []
        # One UPDATE per Queue inside one transaction: each is an index range scan of at
        # most `limit` rows, and the given Queue order needs no sort over all due jobs.
        asks = [(queue, min(cap, limit)) for queue, cap in caps if cap > 0]
        # What the claim and its successes move, counted in one statement (migration 8).
        changes: dict[tuple[str, str], int] = {}
        applied = 0
        with self._write("claiming") as conn:

            def came_short(queue: str) -> None:
                """`queue` gave fewer jobs than asked: say whether a control of it may
                be why."""
                if conn.execute(_sql("queue_is_controlled"), {"queue": queue}).fetchone():
                    controlled.append(queue)

            def took(queue: str, rows: list[_Row], asked: int) -> None:
                """`rows` claimed from `queue` (asked for `asked`): keep them in due order
                (RETURNING order is unspecified), count the move, and if short, say
                whether a control of the Queue may be why."""
                rows.sort(key=_due_order)
                claimed.extend(rows)
                _move(changes, queue, len(rows), "scheduled", "leased")
                if len(rows) < asked:
                    came_short(queue)

            if outcomes:  # applied first, in the claim's transaction (one commit)
                applied = self._apply_outcomes(conn, outcomes, now, changes)
            if 1 < len(asks) <= _MAX_ARMS and sum(count for _, count in asks) <= limit:
                # Per-Queue limits that fit in the total: one statement for every Queue.
                # With tenants this runs once per Queue asked, for about one job each
                # (issue 13): the rows are sorted once, not per Queue, and the loop over
                # the Queues calls only `_move` unless a Queue came back short.
                if all(count == 1 for _, count in asks):  # (tenants: one slot each)
                    params["queues"] = json.dumps([queue for queue, _ in asks])
                    rows = conn.execute(_sql("claim_ones"), params).fetchall()
                else:
                    for (queue, count), (queue_key, limit_key) in zip(asks, _ARM_KEYS,
                                                                      strict=False):
                        params[queue_key] = queue
                        params[limit_key] = count
                    rows = conn.execute(_claim_many_sql(len(asks)), params).fetchall()
                rows.sort(key=_due_order)
                by_queue: dict[str, list[_Row]] = {}
                for row in rows:
                    if (got := by_queue.get(row[2])) is None:
                        by_queue[row[2]] = [row]
                    else:
                        got.append(row)
                for queue, asked in asks:
                    got = by_queue.get(queue)
                    if got is None:
                        came_short(queue)
                        continue
                    claimed += got
                    _move(changes, queue, len(got), "scheduled", "leased")
                    if len(got) < asked:
                        came_short(queue)
                asks = []
            for queue, cap in asks:
                remaining = limit - len(claimed)
                if remaining <= 0:
                    break
                params["queue"] = queue
                params["limit"] = asked = min(cap, remaining)
                took(queue, conn.execute(claim_sql, params).fetchall(), asked)
            _count_jobs(conn, changes)
            if probe:
                due = self._probe(conn, probe, now)
        times: dict[int, datetime] = {}
        return Claimed(quarantine_undecodable(
            self, [_claimed(row, owner, lease_expires_at, now, times) for row in claimed], now),
            due, controlled, applied)

    @staticmethod
    def _apply_outcomes(
        conn: sqlite3.Connection, outcomes: Sequence[LeaseOutcome], now: datetime,
        changes: dict[tuple[str, str], int],
    ) -> int:
        """Inside a write transaction: each outcome with the statement its own method runs
        (successes batched, their count moves added to `changes` for the caller to
        count); how many leases were still held."""
        finished_at = _us(now)
        succeeded: list[Lease] = []
        results: list[str | None] = []
        applied = 0
        for lease, outcome in outcomes:
            if isinstance(outcome, Succeeded):
                succeeded.append(lease)
                results.append(outcome.result_json)
                continue
            fence = {"id": lease.job_id, "owner": lease.owner, "attempt": lease.attempt}
            if isinstance(outcome, RetryAt):
                applied += conn.execute(_sql("retry"), {
                    **fence, "now": finished_at, "due_at": _us(outcome.due_at),
                    "error": outcome.error, "cancelled_error": CANCELLED_ON_REQUEST,
                }).rowcount
            else:
                name = ("dead_letter" if isinstance(outcome, DeadLettered) else
                        "cancel_leased" if isinstance(outcome, Cancelled) else "quarantine")
                applied += conn.execute(_sql(name), {
                    **fence, "now": finished_at, "error": outcome.error}).rowcount
        if succeeded:
            applied += SQLiteStore._complete_on(conn, succeeded, results, now, changes)
        return applied

    @staticmethod
    def _probe(conn: sqlite3.Connection, queues: Sequence[str], now: datetime) -> list[str]:
        if len(queues) >= _PROBE_SCAN_FROM:
            # Many Queues (a survey or recheck of tenants, most of them empty): walk the
            # Queues that have scheduled jobs instead, if they are few beside the Queues
            # probed (issue 13: 10,000 empty tenants cost 10,000 seeks a probe). A walked
            # Queue costs ~4 probed by name, so the walk gives up after an eighth: at
            # worst a probe then costs ~1.4 times what it did.
            rows = conn.execute(_sql("probe_scan"), {
                "now": _us(now), "cap": len(queues) // _PROBE_SCAN_SHARE + 1}).fetchall()
            if any(row[0] is None for row in rows):
                wanted = set(queues)
                return [row[0] for row in rows if row[1] and row[0] in wanted]
        rows = conn.execute(_sql("probe"), {"queues": json.dumps(list(queues)),
                                            "now": _us(now)}).fetchall()
        return [row[0] for row in rows]

    def complete(
        self, leases: Sequence[Lease], now: datetime,
        results: Sequence[str | None] | None = None,
    ) -> int:
        if not leases:
            return 0
        changes: dict[tuple[str, str], int] = {}
        with self._write("completing jobs") as conn:
            finished = self._complete_on(conn, leases, results, now, changes)
            _count_jobs(conn, changes)
        return finished

    @staticmethod
    def _complete_on(conn: sqlite3.Connection, leases: Sequence[Lease],
                     results: Sequence[str | None] | None, now: datetime,
                     changes: dict[tuple[str, str], int]) -> int:
        """Inside a write transaction: finish `leases` as succeeded (complete.sql, one
        statement per 200 leases) and add the jobs it moved to `changes` (the caller
        counts them, migration 8); how many were still held. Shared by `complete` and the
        outcomes a claim carries, so both count alike."""
        with_results = results is not None and results.count(None) < len(results)
        finished: list[_Row] = []
        for start in range(0, len(leases), _MAX_COMPLETED):
            batch = leases[start:start + _MAX_COMPLETED]
            params: list[object] = [_us(now)]
            if with_results:
                assert results is not None
                for lease, result in zip(batch, results[start:start + _MAX_COMPLETED],
                                         strict=True):
                    params += (lease.job_id, lease.owner, lease.attempt, result)
            else:
                for lease in batch:
                    params += (lease.job_id, lease.owner, lease.attempt)
            finished += conn.execute(_complete_sql(len(batch), with_results),
                                     params).fetchall()
        if finished and finished.count(finished[0]) == len(finished):  # one Queue
            _move(changes, finished[0][0], len(finished), "leased", "succeeded")
        else:
            for queue, jobs in Counter(queue for (queue,) in finished).items():
                _move(changes, queue, jobs, "leased", "succeeded")
        return len(finished)

    def release(self, leases: Sequence[Lease], now: datetime) -> int:
        if not leases:
            return 0
        finished_at = _us(now)  # of a job whose cancel was requested: it ends cancelled
        rows = [(CANCELLED_ON_REQUEST, finished_at, lease.job_id, lease.owner, lease.attempt)
                for lease in leases]
        with self._write("releasing jobs") as conn:
            return conn.executemany(_sql("release"), rows).rowcount

    def _end_lease(self, name: str, lease: Lease, doing: str, **params: object) -> bool:
        params.update(id=lease.job_id, owner=lease.owner, attempt=lease.attempt)
        with self._write(doing) as conn:
            return conn.execute(_sql(name), params).rowcount == 1

    def retry(self, lease: Lease, now: datetime, due_at: datetime, error: str) -> bool:
        return self._end_lease("retry", lease, "retrying a job", now=_us(now),
                               due_at=_us(due_at), error=error,
                               cancelled_error=CANCELLED_ON_REQUEST)

    def dead_letter(self, lease: Lease, now: datetime, error: str) -> bool:
        return self._end_lease(
            "dead_letter", lease, "dead-lettering a job", now=_us(now), error=error
        )

    def quarantine(self, lease: Lease, now: datetime, error: str) -> bool:
        return self._end_lease(
            "quarantine", lease, "quarantining a job", now=_us(now), error=error
        )

    def cancel_leased(self, lease: Lease, now: datetime, error: str) -> bool:
        return self._end_lease("cancel_leased", lease, "cancelling a leased job",
                               now=_us(now), error=error)

    def heartbeat(
        self, leases: Sequence[Lease], now: datetime, lease_expires_at: datetime
    ) -> Renewal:
        if not leases:
            return Renewal()
        renewed: set[int] = set()
        cancel_requested: set[int] = set()
        params: dict[str, object] = {"now": _us(now), "lease_expires_at": _us(lease_expires_at)}
        heartbeat_sql = _sql("heartbeat")
        with self._write("renewing leases") as conn:
            for lease in leases:
                params.update(id=lease.job_id, owner=lease.owner, attempt=lease.attempt)
                for job_id, cancel in conn.execute(heartbeat_sql, params):
                    renewed.add(job_id)
                    if cancel:
                        cancel_requested.add(job_id)
        return Renewal(renewed, cancel_requested)

    def expire_lease(
        self, lease: Lease, now: datetime, due_at: datetime | None, error: str
    ) -> bool:
        if due_at is None:
            return self._end_lease(
                "expire_lease_dead_letter", lease, "expiring a lease", now=_us(now), error=error
            )
        return self._end_lease(
            "expire_lease_retry", lease, "expiring a lease",
            now=_us(now), due_at=_us(due_at), error=error, cancelled_error=CANCELLED_ON_REQUEST,
        )

    def cancel(self, job_id: int, now: datetime) -> bool:
        with self._write("cancelling a job") as conn:
            return conn.execute(_sql("cancel"), {"id": job_id, "now": _us(now)}).rowcount == 1

    def purge(
        self, states: Sequence[JobState], finished_before: datetime, limit: int
    ) -> int:
        chosen = purgeable_states(states)
        if limit <= 0:
            return 0
        params: dict[str, object] = {"finished_before": _us(finished_before)}
        deleted = 0
        # One write transaction of at most `limit` deletions: the write lock is held for
        # one bounded batch, then claims get their turn (the caller paces the batches).
        with self._write("purging finished jobs") as conn:
            for state in chosen:
                params.update(state=state.value, limit=limit - deleted)
                deleted += conn.execute(_sql("purge"), params).rowcount
                if deleted >= limit:
                    break
        return deleted

    def requeue(self, job_id: int, now: datetime) -> bool:
        with self._write("requeueing a job") as conn:
            rows = conn.execute(_sql("requeue"), {"id": job_id, "now": _us(now)}).fetchall()
        self._wake_others([queue for (queue,) in rows])
        return len(rows) == 1

    def requeue_many(self, *, state: JobState, queue: str | None, now: datetime) -> int:
        params = {"state": check_requeueable(state).value, "queue": queue, "now": _us(now)}
        with self._write("requeueing jobs") as conn:
            rows = conn.execute(_sql("requeue_many"), params).fetchall()
        self._wake_others(list(dict.fromkeys(queue for (queue,) in rows)))
        return len(rows)

    # -- Queue controls -----------------------------------------------------------------------

    def _change_settings(self, name: str, params: dict[str, object]) -> QueueSettings:
        with self._write("changing Queue settings") as conn:
            queue, paused, limit = conn.execute(_sql(name), params).fetchone()
        if not paused:  # a resume or a new limit may leave room: other processes look now
            self._wake_others([queue])
        return QueueSettings(queue, paused=bool(paused), limit=limit)

    def pause_queue(self, queue: str) -> QueueSettings:
        return self._change_settings(
            "set_queue_paused", {"queue": validate_queue_name(queue), "paused": 1})

    def resume_queue(self, queue: str) -> QueueSettings:
        return self._change_settings(
            "set_queue_paused", {"queue": validate_queue_name(queue), "paused": 0})

    def set_queue_limit(self, queue: str, limit: int | None) -> QueueSettings:
        return self._change_settings("set_queue_limit", {
            "queue": validate_queue_name(queue), "limit": validate_queue_limit(limit)})

    def queue_infos(self, now: datetime) -> list[QueueInfo]:
        with self._read("reading Queues") as conn:
            rows = conn.execute(_sql("queue_infos"), {"now": _us(now)}).fetchall()
        settings: list[QueueSettings] = []
        counts: dict[tuple[str, JobState], int] = {}
        due: dict[str, tuple[int, datetime | None]] = {}
        for queue, state, count, due_count, oldest, paused, limit in rows:
            if state is None:
                settings.append(QueueSettings(queue, paused=bool(paused), limit=limit))
                continue
            counts[(queue, _STATES[state])] = count
            if due_count:
                due[queue] = (due_count, _at(oldest))
        return build_queue_infos(settings, counts, due)

    # -- reads ------------------------------------------------------------------------------

    def find_expired_leases(self, now: datetime, limit: int) -> list[JobRecord]:
        with self._read("finding expired leases") as conn:
            rows = conn.execute(
                _sql("find_expired_leases"), {"now": _us(now), "limit": limit}
            ).fetchall()
        return [_record(row) for row in rows]

    def get_job(self, job_id: int) -> JobRecord | None:
        with self._read("reading a job") as conn:
            row = conn.execute(_sql("get_job"), {"id": job_id}).fetchone()
        return None if row is None else _record(row)

    def list_jobs(
        self,
        *,
        queue: str | None = None,
        state: JobState | None = None,
        limit: int = 100,
        newest: bool = False,
        offset: int = 0,
        name: str | None = None,
    ) -> list[JobRecord]:
        params = {
            "queue": queue, "state": None if state is None else state.value, "limit": limit,
            "offset": offset, "name": name,
        }
        with self._read("listing jobs") as conn:
            rows = conn.execute(_sql(listing_statement(newest, state)), params).fetchall()
        return [_record(row) for row in rows]

    def count_jobs(self) -> dict[tuple[str, JobState], int]:
        with self._read("counting jobs") as conn:
            rows = conn.execute(_sql("count_jobs")).fetchall()
        return {(queue, _STATES[state]): count for queue, state, count in rows}

    # -- the dashboard's "when will it run?" (branch dashboard) --------------------------

    def due_position(self, job_id: int, now: datetime) -> int | None:
        with self._read("finding a job's place among the due jobs") as conn:
            row = conn.execute(_sql("due_position"), {"id": job_id, "now": _us(now)}).fetchone()
        return None if row is None else int(row[0])

    def listen(self, on_enqueue: Callable[[str], None]) -> Callable[[], None]:
        """Wake-up hints for enqueues made by other processes sharing the file.

        SQLite has no notifications, so a watcher thread with its own connection reads
        `PRAGMA data_version` (it changes only when another connection commits) and, when
        it changed, the Queues of the jobs added since. It reads it when another process's
        enqueue wakes it through a Unix datagram socket beside the file
        (`<db>.rota-wake/`, `rota.store.sqlite_wake`: about a millisecond), and every
        20 ms anyway, the safety net for enqueues that send no wake-up (a transactional
        `enqueue_on`, Windows, a directory rota may not write). A requeue, a resume or a
        limit change in another process adds no job to find: its datagram names the
        Queues, which are hinted as they arrive (without a datagram, the worker's own poll
        finds that work). An optimisation only: polling stays the truth.

        Returns:
            A function that stops the watcher and closes its connection.
        """
        watcher = _EnqueueWatcher(self, on_enqueue)
        watcher.start()
        return watcher.stop

    def _watch_connection(self) -> sqlite3.Connection:
        if self._read_only:
            return self._connect_read_only(immutable=False)
        return sqlite3.connect(
            self._path, timeout=self._busy_timeout_s, isolation_level=None,
            check_same_thread=False,  # opened by the caller of listen(), used by the watcher
        )

    def checkpoint_wal(self) -> int:
        """Fold the -wal file back into the database, as far as readers allow, without
        waiting (a PASSIVE checkpoint); once all of it is folded back, the next write
        starts the WAL over, truncated to 4 MiB. Workers call it on a cadence
        (`rota.worker.checkpoint`). A read-only store does nothing.

        Returns:
            The WAL frames (pages) left to fold back because readers still use them;
            0 when the whole WAL is in the database.
        """
        if self._read_only:
            return 0
        with self._read("checkpointing the WAL") as conn:
            row = conn.execute(_sql("wal_checkpoint")).fetchone()
        _busy, wal_frames, folded = row
        return max(int(wal_frames) - int(folded), 0)

    def close(self) -> None:
        """Close the connection; idempotent. Later calls raise StoreError."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._wake is not None:
                self._wake.close()

    # -- transactional enqueue (branch integrate) -------------------------------------------

    def enqueue_on(
        self, connection: object, jobs: Sequence[NewJob], now: datetime
    ) -> list[int]:
        """Store `jobs` on the caller's `sqlite3.Connection` to this store's file, inside
        its current transaction: they exist if and only if the caller commits.

        The writes run inside a SAVEPOINT, so a failure leaves the caller's transaction as
        it was. A connection in Python's default (legacy) transaction mode that has no
        transaction open gets one (`BEGIN`, as Python would open before an INSERT), for the
        caller to commit or roll back. A connection in autocommit mode with no transaction
        open has nothing to join: the jobs commit at once. Workers in other processes see
        them when the caller commits (their watcher polls `PRAGMA data_version`).

        Raises:
            TypeError: `connection` is not a `sqlite3.Connection`.
            StoreError: it is open on another file, or its file's schema is not this rota's
                (opening the store migrates it: `rota.App(url)` or `rota migrate` first).
            sqlite3.Error: from the caller's connection, unchanged.
        """
        if not isinstance(connection, sqlite3.Connection):
            raise TypeError(
                f"SQLite store {self._url!r} enqueues on a sqlite3.Connection to its file "
                f"{self._path!r}; got {type(connection).__module__}."
                f"{type(connection).__qualname__}"
            )
        if self._read_only:
            raise StoreError(
                f"SQLite store {self._url!r} was opened read-only; enqueueing needs a "
                "writable store: open it without read_only"
            )
        if not jobs:
            return []
        rows = _enqueue_rows(jobs, now)
        cursor = connection.cursor()
        cursor.row_factory = None  # whatever the caller's connection uses, tuples here
        try:
            self._check_callers_file(cursor)
            legacy = getattr(sqlite3, "LEGACY_TRANSACTION_CONTROL", -1)
            if (not connection.in_transaction and connection.isolation_level is not None
                    and getattr(connection, "autocommit", legacy) == legacy):
                # What Python itself runs before the first INSERT of a transaction.
                cursor.execute(f"BEGIN {connection.isolation_level}")
            cursor.execute("SAVEPOINT rota_enqueue")
            try:
                ids = _insert_jobs(cursor, rows, jobs)
            except BaseException:
                # Undo rota's writes only. Some errors (disk full, I/O) make SQLite roll
                # the whole transaction back itself: then there is no savepoint left, and
                # the original error is the one to raise.
                if connection.in_transaction:
                    with suppress(sqlite3.Error):
                        cursor.execute("ROLLBACK TO rota_enqueue")
                        cursor.execute("RELEASE rota_enqueue")
                raise
            cursor.execute("RELEASE rota_enqueue")
            return ids
        finally:
            cursor.close()

    def _check_callers_file(self, cursor: sqlite3.Cursor) -> None:
        main = next((row[2] for row in cursor.execute("PRAGMA database_list")
                     if row[1] == "main"), "")
        if not main or os.path.realpath(main) != os.path.realpath(self._path):
            raise StoreError(
                f"SQLite store {self._url!r}: the connection given is open on "
                f"{main or 'an in-memory database'!r}, not on the store's file "
                f"{str(Path(self._path).resolve())!r}; connect to the store's file"
            )
        version = int(cursor.execute(_sql("schema_version")).fetchone()[0])
        if version != schema_version_known():
            raise StoreError(
                f"SQLite store {self._url!r} has schema version {version}, this rota writes "
                f"version {schema_version_known()}; open the store first (rota.App(url) or "
                "`rota migrate`), which migrates it"
            )

    # -- Schedules (branch schedules) ---------------------------------------------------------

    def register_schedules(self, schedules: Sequence[ScheduleRegistration],
                           now: datetime) -> None:
        if not schedules:
            return
        at = _us(now)
        rows = [
            {"name": s.name, "definition": s.definition, "rule": s.rule,
             "timezone": s.timezone, "job_name": s.job_name, "queue": s.queue, "now": at}
            for s in schedules
        ]
        with self._write("registering schedules") as conn:
            conn.executemany(_sql("register_schedule"), rows)

    def fire_schedule(self, name: str, definition: str, job: NewJob,
                      now: datetime) -> FireOutcome:
        check_new_jobs([job])  # the same jobs refused on every store
        decode_arguments(job.args_json, job.kwargs_json)  # bad JSON fails before writing
        params: dict[str, object] = {
            "name": name, "definition": definition, "fire_at": _us(job.due_at),
            "job_name": job.name, "queue": job.queue, "args": job.args_json,
            "kwargs": job.kwargs_json, "now": _us(now),
        }
        # The compare-and-set and the insert share one write transaction (BEGIN
        # IMMEDIATE holds the file's write lock): no other process can fire in between.
        fired: int | None = None
        with self._write("firing a schedule") as conn:
            if conn.execute(_sql("fire_schedule"), params).rowcount == 1:
                (job_id,) = conn.execute(_sql("fire_schedule_enqueue"), params).fetchone()
                _count_jobs(conn, {(job.queue, "scheduled"): 1})
                fired = int(job_id)
            else:
                row = conn.execute(_sql("schedule_definition"), {"name": name}).fetchone()
        if fired is not None:
            self._wake_others()  # after the commit: other processes' watchers look at once
            return FireOutcome(fired)
        return FireOutcome(None, current=row is not None and row[0] == definition)

    def list_schedules(self) -> list[ScheduleRow]:
        with self._read("listing schedules") as conn:
            rows = conn.execute(_sql("list_schedules")).fetchall()
        return [
            ScheduleRow(name, definition, rule, timezone, job_name, queue,
                        _at(registered_at), _at(updated_at),
                        None if last_fire_at is None else _at(last_fire_at))
            for (name, definition, rule, timezone, job_name, queue, registered_at,
                 updated_at, last_fire_at) in rows
        ]

    # -- worker registry (branch registry) -------------------------------------------------

    def register_worker(self, worker: WorkerInfo, now: datetime) -> None:
        params = {
            "id": worker.id, "host": worker.host, "pid": worker.pid, "version": worker.version,
            "started_at": _us(worker.started_at), "now": _us(now),
            "dead_at": _us(worker.dead_at), "groups": groups_json(worker.groups),
            "in_flight": in_flight_json({g.name: g.in_flight for g in worker.groups}),
            "served": served_json(worker.served),
        }
        group_rows = []
        for group in worker.groups:
            kind, queues, weights = policy_columns(group)
            group_rows.append({"name": group.name, "kind": kind, "queues": queues,
                               "weights": weights, "pool_size": group.pool_size,
                               "now": _us(now)})
        with self._write("registering a worker") as conn:
            conn.execute(_sql("register_worker"), params)
            conn.executemany(_sql("register_worker_group"), group_rows)

    def refresh_worker(
        self,
        worker_id: str,
        now: datetime,
        *,
        dead_at: datetime,
        in_flight: Mapping[str, int],
        served: Sequence[ServedCount],
        new: Sequence[ServedCount] = (),
    ) -> bool:
        params = {"id": worker_id, "now": _us(now), "dead_at": _us(dead_at),
                  "in_flight": in_flight_json(in_flight), "served": served_json(served)}
        minute = _us(minute_of(now))
        rows = [{"minute": minute, "grp": c.group, "queue": c.queue, "outcome": c.outcome,
                 "count": c.count} for c in new]
        with self._write("refreshing a worker") as conn:
            if conn.execute(_sql("refresh_worker"), params).rowcount != 1:
                return False
            if rows:
                conn.executemany(_sql("add_served"), rows)
        return True

    def unregister_worker(self, worker_id: str) -> bool:
        with self._write("unregistering a worker") as conn:
            return bool(conn.execute(_sql("unregister_worker"), {"id": worker_id}).rowcount)

    def remove_dead_workers(self, dead_before: datetime) -> int:
        with self._write("removing dead workers") as conn:
            return int(conn.execute(
                _sql("remove_dead_workers"), {"dead_before": _us(dead_before)}).rowcount)

    def prune_served(self, before: datetime) -> int:
        with self._write("pruning the served history") as conn:
            return int(conn.execute(_sql("prune_served"), {"before": _us(before)}).rowcount)

    def list_workers(self, now: datetime) -> list[WorkerInfo]:
        with self._read("listing workers") as conn:
            rows = conn.execute(_sql("list_workers")).fetchall()
        moment = _us(now)
        return [
            WorkerInfo(
                id=worker_id, host=host, pid=pid, version=version, started_at=_at(started_at),
                last_seen=_at(last_seen), dead_at=_at(dead_at),
                groups=groups_from_json(groups, in_flight), served=served_from_json(served),
                alive=moment < dead_at,
            )
            for (worker_id, host, pid, version, started_at, last_seen, dead_at, groups,
                 in_flight, served) in rows
        ]

    def served_counts(self, since: datetime) -> list[ServedCount]:
        with self._read("reading the served history") as conn:
            rows = conn.execute(
                _sql("served_counts"), {"since": _us(minute_of(since))}).fetchall()
        return [
            ServedCount(group=group, queue=queue, outcome=outcome, count=count,
                        minute=_at(minute))
            for minute, group, queue, outcome, count in rows
        ]

    def worker_groups(self) -> list[WorkerGroupInfo]:
        with self._read("reading Worker Groups") as conn:
            rows = conn.execute(_sql("worker_groups")).fetchall()
        return [
            group_from_columns(name, kind, queues, weights, pool_size, _at(seen_at))
            for name, kind, queues, weights, pool_size, seen_at in rows
        ]

    # -- cross-process wake-ups (issue 14, branch pickup) ------------------------------------

    def _wake_others(self, queues: Sequence[str] | None = None) -> None:
        """After a commit that added jobs: wake the watchers of other store objects (other
        processes, mostly) at once, instead of at their next poll. With `queues`: after a
        commit that made jobs of those Queues claimable again without adding any (a
        requeue, a resume, a limit change), name them (nothing when there are none).
        Never raises."""
        if self._wake is not None and (queues is None or queues):
            self._wake.send(queues or ())

    def _wake_listener(self) -> WakeListener | None:
        """A bound wake-up socket for a new watcher, or None: poll only."""
        if self._wake is None:  # read-only: create nothing beside the file
            return None
        listener = WakeListener.bind(wake_directory(self._path))
        if listener is not None:
            self._wake.add_own(listener.name)
        return listener

    def _drop_wake_listener(self, listener: WakeListener) -> None:
        if self._wake is not None:
            self._wake.remove_own(listener.name)
        listener.close()


def _require_sqlite_with_returning() -> None:
    if sqlite3.sqlite_version_info < MINIMUM_SQLITE:
        needed = ".".join(map(str, MINIMUM_SQLITE))
        raise StoreError(
            f"rota's SQLite store needs SQLite {needed} or newer (for UPDATE ... RETURNING); "
            f"this Python uses SQLite {sqlite3.sqlite_version}. Use a newer Python build, or "
            "a postgresql:// store"
        )


class _EnqueueWatcher:
    """The thread behind `SQLiteStore.listen` (see there). Owns its connection and its
    wake-up socket (None: poll only)."""

    INTERVAL_S = 0.02
    UNEXPECTED_BACKOFF_S = 1.0
    # At most one datagram-driven check per gap: a process enqueueing thousands of single
    # jobs a second must not make every idle worker check after each one (measured:
    # docs/benchmarks.md). Datagrams arriving meanwhile wait in the socket, read in one go.
    MIN_WAKE_GAP_S = 0.001

    def __init__(self, store: SQLiteStore, on_enqueue: Callable[[str], None]) -> None:
        self._on_enqueue = on_enqueue
        self._url = store.url
        self._store = store
        self._woken_at = -math.inf
        self._stopping = threading.Event()
        self._conn = store._watch_connection()
        # Bound before the first read: an enqueue that commits after that read sends a
        # datagram that wakes the first wait (one that commits before it is not new).
        self.wake: WakeListener | None = None
        try:
            self.wake = store._wake_listener()
            with store._translate("starting the enqueue watcher"):
                self._version = self._conn.execute(_sql("data_version")).fetchone()[0]
                self._newest = int(self._conn.execute(_sql("newest_job_id")).fetchone()[0])
        except BaseException:
            self._close_wake()
            self._conn.close()
            raise
        self._thread = threading.Thread(
            target=self._run, name="rota-sqlite-watch", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        wake = self.wake  # read once: the thread may close it meanwhile (a poke then misses)
        if wake is not None:
            wake.poke()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        elif not self._thread.is_alive() and self.wake is not None:
            self._close_wake()  # never started: _run's finally will not do it

    def _wait(self, delay_s: float) -> bool:
        """Wait for a wake-up datagram or `delay_s`; True if stopping."""
        if self.wake is None:
            return self._stopping.wait(delay_s)
        rest_s = self._woken_at + self.MIN_WAKE_GAP_S - time.monotonic()
        if rest_s > 0:
            if self._stopping.wait(rest_s):
                return True
            delay_s = max(delay_s - rest_s, 0.0)
        if self.wake.wait(delay_s):
            self._woken_at = time.monotonic()
        return self._stopping.is_set()

    def _close_wake(self) -> None:
        wake, self.wake = self.wake, None
        if wake is not None:
            self._store._drop_wake_listener(wake)

    def _run(self) -> None:
        delay_s = self.INTERVAL_S
        try:
            while not self._wait(delay_s):
                delay_s = self.INTERVAL_S
                try:
                    self._check()
                except sqlite3.Error as error:  # busy, or the file went away: try later
                    log.debug("enqueue watcher on %s: %s", self._url, error)
                except Exception:
                    # Anything else (a bug): log it, back off, go on; hints are only an
                    # optimisation, but a dead watcher would be silent.
                    delay_s = self.UNEXPECTED_BACKOFF_S
                    log.exception("enqueue watcher on %s failed unexpectedly; retrying in "
                                  "%.0f s", self._url, delay_s)
        finally:
            self._close_wake()
            self._conn.close()

    def _check(self) -> None:
        # Queues named by datagrams (requeues, resumes, limit changes: no new id to find)
        # are hinted whatever data_version says: they were sent after their commit.
        wake = self.wake  # read once: stop() may close it meanwhile
        hinted = dict.fromkeys(wake.take_named() if wake is not None else ())
        version = self._conn.execute(_sql("data_version")).fetchone()[0]
        if version != self._version:
            self._version = version
            rows = self._conn.execute(_sql("enqueued_since"),
                                      {"after": self._newest}).fetchall()
            for queue, newest in rows:
                self._newest = max(self._newest, int(newest))
                hinted[str(queue)] = None
        for queue in hinted:
            try:
                self._on_enqueue(queue)
            except Exception:
                log.exception("an on_enqueue callback failed; hint dropped")
