"""The SQLite store's file: its URL, opening it (writable or read-only), migrating it,
and the one connection every call shares, guarded by one lock (docs/stores.md says why),
with its transactions and errors. Every write runs in `BEGIN IMMEDIATE`: it takes the
single write lock up front, so a claim's read and update are one atomic step across
threads and processes, and waiting for the lock goes through the busy timeout. Only
transaction control is spelled in Python; every statement is a file in `sql/sqlite/`.

Imports only the standard library, the core, the store contract and the shared SQL base.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import ClassVar, Final, Self
from urllib.parse import parse_qs

from rota.core.jobs import JobState, JsonValue
from rota.core.meta import decode_meta, meta_matches
from rota.core.storage_health import StorageHealth
from rota.store.base import StoreConfigError, StoreError
from rota.store.sql_base import STATES, Migration, Row, SqlStore
from rota.store.sqlite.schema import FILES, at, schema_version_known, sql, statements, us
from rota.store.sqlite.wake import (
    RELIST_S,
    WAIT_SUFFIX,
    WakeSender,
    _EnqueueWatcher,
    _FinishWatcher,
    wake_directory,
)

EXPECTED_FORM: Final = "expected sqlite:///relative/path.db or sqlite:////absolute/path.db"
DEFAULT_BUSY_TIMEOUT_S: Final = 5.0
# How often a write waiting for another process's write lock tries again.
LOCK_RETRY_S: Final = 0.0005
MINIMUM_SQLITE: Final = (3, 35, 0)  # UPDATE ... RETURNING


# The statements the shared methods run (rota.store.sql_base) that may end one job: each
# returns the job's id when it ended a job with children, whose released children's
# Queues `_run` then wakes.
_ENDING_ONE: Final = frozenset({
    "dead_letter", "quarantine", "cancel_leased", "retry", "snooze", "expire_lease_retry",
    "expire_lease_dead_letter", "cancel"})


def _is_busy(error: sqlite3.Error) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(error) or "busy" in str(error)


def _require_sqlite_with_returning() -> None:
    if sqlite3.sqlite_version_info < MINIMUM_SQLITE:
        needed = ".".join(map(str, MINIMUM_SQLITE))
        raise StoreError(
            f"rota's SQLite store needs SQLite {needed} or newer (for UPDATE ... RETURNING); "
            f"this Python uses SQLite {sqlite3.sqlite_version}. Use a newer Python build, or "
            "a postgresql:// store"
        )



@lru_cache(maxsize=64)
def _wanted_meta(text: str) -> dict[str, JsonValue]:
    wanted: dict[str, JsonValue] = json.loads(text)
    return wanted


def _meta_matches(meta: str | None, wanted: str | None) -> bool:
    """find_jobs.sql's `rota_meta_matches(meta, :meta)`: the rule of rota.core.meta."""
    if meta is None or wanted is None:
        return False
    return meta_matches(decode_meta(meta), _wanted_meta(wanted))


def register_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions rota's statements call, on a new connection."""
    conn.create_function("rota_meta_matches", 2, _meta_matches, deterministic=True)

class SQLiteConnection(SqlStore[sqlite3.Connection]):
    """The store's file and connection; `SQLiteStore` documents the arguments."""

    _files = FILES
    _END_LEASE: ClassVar[Mapping[JobState, str]] = {
        JobState.DEAD_LETTERED: "dead_letter", JobState.QUARANTINED: "quarantine",
        JobState.CANCELLED: "cancel_leased"}
    _EXPIRE_LEASE: ClassVar[tuple[str, str]] = ("expire_lease_retry", "expire_lease_dead_letter")
    _to_db_time = staticmethod(us)
    _from_db_time = staticmethod(at)

    @staticmethod
    def _from_db_parents(value: str | None, /) -> tuple[int, ...]:
        """The `parents` column (migration 14): a JSON array of ids, NULL for none."""
        return () if value is None else tuple(json.loads(value))

    @staticmethod
    def _text_list(texts: Sequence[str], /) -> str:
        return json.dumps(list(texts))  # read with json_each

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
        self._schema_label = f"SQLite store {self._url!r}"
        if not isinstance(busy_timeout_s, int | float) or not (
            math.isfinite(busy_timeout_s) and busy_timeout_s >= 0
        ):
            raise StoreConfigError(
                f"store URL {self._url!r}: busy_timeout_s must be a number of seconds >= 0; "
                f"got {busy_timeout_s!r}, e.g. ?busy_timeout_s=5 ({EXPECTED_FORM})"
            )
        self._busy_timeout_s = float(busy_timeout_s)
        self._busy_timeout_pragma = f"PRAGMA busy_timeout = {round(busy_timeout_s * 1000)}"
        _require_sqlite_with_returning()
        self._lock = threading.Lock()
        self._applied_at_open: list[int] = []
        self._conn: sqlite3.Connection | None = (
            self._open_read_only() if read_only else self._open()
        )
        # Wake-ups of other processes (rota.store.sqlite.wake): a read-only store never
        # makes jobs claimable, so it sends nothing.
        self._wake: WakeSender | None = (
            None if read_only else WakeSender(wake_directory(self._path))
        )
        # ... and of the processes waiting for jobs to finish (`listen_finished`).
        self._finish_wake: WakeSender | None = (
            None if read_only else
            WakeSender(wake_directory(self._path), WAIT_SUFFIX, relist_s=RELIST_S)
        )

    @classmethod
    def from_url(cls, url: str, *, read_only: bool = False) -> Self:
        """Open the store `url` names: `sqlite:///relative/path.db` (relative to the working
        directory) or `sqlite:////absolute/path.db`; optional `?busy_timeout_s=SECONDS`.
        `read_only`: see `SQLiteStore`.

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
    def path(self) -> str:
        return self._path

    @property
    def read_only(self) -> bool:
        return self._read_only

    def __repr__(self) -> str:
        return f"SQLiteStore({self._path!r})"

    # -- opening ------------------------------------------------------------------------

    def _refuse_directory(self, where: Path) -> None:
        if where.is_dir():
            raise StoreConfigError(
                f"store URL {self._url!r} names a directory, not a database file; "
                f"{EXPECTED_FORM}"
            )

    def _open(self) -> sqlite3.Connection:
        where = Path(self._path)
        self._refuse_directory(where)
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
            raise StoreError(f"cannot open SQLite store {self._url!r}: {error}"
                             f"{self._unwritable_directory(parent)}") from error
        register_functions(conn)
        try:
            with self._translate("opening"):
                for statement in statements(sql("connection_pragmas")):
                    result = self._pragma(conn, statement)
                    if "journal_mode" in statement and (result is None or result[0] != "wal"):
                        raise StoreError(
                            f"SQLite store {self._url!r}: could not switch the file to WAL "
                            f"mode (got {result!r}); put it on a local file system"
                        )
                self._applied_at_open = self._migrate_on(conn)
        except StoreError as error:
            conn.close()
            hint = self._unwritable_directory(parent)
            if hint:
                raise StoreError(f"{error}{hint}") from error
            raise
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _unwritable_directory(parent: Path) -> str:
        """What to say when opening for writing failed in a directory this user may not
        write (SQLite's own words, `attempt to write a readonly database`, do not say
        that the directory is the cause); empty when the directory is writable."""
        if os.access(parent, os.W_OK | os.X_OK):
            return ""
        return (f". The directory {str(parent.resolve())!r} must be writable by this user: "
                "SQLite keeps the store's WAL and shared-memory files beside the database "
                "file, and rota its wake-up sockets. Make it writable, or read the store "
                "with a read command (rota queues, jobs, ...), which opens it read-only")

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

    def _open_read_only(self) -> sqlite3.Connection:
        """A read-only connection (see `SQLiteStore`), checked to hold this rota's schema."""
        where = Path(self._path)
        self._refuse_directory(where)
        if not where.exists():
            # No hint at the URL's form: the URL is fine, the file is not there (yet).
            raise StoreConfigError(
                f"store URL {self._url!r}: file {str(where.resolve())!r} does not exist yet; "
                "read-only commands never create a store: a worker or `rota migrate` "
                "creates it (or check the path)"
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
                version = self._checked_version(conn)
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
        uri = f"{Path(self._path).resolve().as_uri()}?mode=ro"
        conn = sqlite3.connect(
            f"{uri}&immutable=1" if immutable else uri, uri=True,
            timeout=self._busy_timeout_s, isolation_level=None, check_same_thread=False,
        )
        register_functions(conn)
        try:
            conn.execute(sql("schema_version")).fetchone()  # opening is lazy: read once
        except BaseException:
            conn.close()
            raise
        return conn

    # -- migrations ---------------------------------------------------------------------

    def schema_version(self) -> int:
        """The file's schema version (PRAGMA user_version)."""
        with self._read("reading the schema version") as conn:
            return self._schema_version_on(conn)

    def migrate(self) -> list[int]:
        """Apply the migrations the file lacks; return the versions applied by this store
        object (opening the store already migrates, so this reports what opening did).

        Raises:
            SchemaTooNew: if the file was migrated by a newer rota.
            StoreError: if the store was opened read-only and the file needs migrating.
        """
        with self._read("migrating") as conn:
            applied = self._applied_at_open + self._migrate_on(conn)
        self._applied_at_open = []
        return applied

    def _schema_version_on(self, conn: sqlite3.Connection) -> int:
        return int(conn.execute(sql("schema_version")).fetchone()[0])

    def _apply_migration(self, conn: sqlite3.Connection, migration: Migration) -> None:
        for statement in migration.statements:
            conn.execute(statement)
        if self._schema_version_on(conn) != migration.version:
            raise RuntimeError(f"migration {migration.name} must end with "
                               f"PRAGMA user_version = {migration.version};")

    # -- transactions and errors ----------------------------------------------------------

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

    def _begin_immediate(self, conn: sqlite3.Connection) -> None:
        """`BEGIN IMMEDIATE`, waiting for the write lock up to the busy timeout by trying
        again every `LOCK_RETRY_S`: SQLite's own busy handler sleeps up to 100 ms between
        tries and so misses the short gaps between another process's transactions (a
        bulk enqueue's calls). The handler is off for this statement only; any other
        wait (a read during a checkpoint) still goes through it (docs/decisions/0057)."""
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            deadline = time.monotonic() + self._busy_timeout_s
            while True:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as error:
                    if not _is_busy(error) or time.monotonic() >= deadline:
                        raise
                time.sleep(LOCK_RETRY_S)
        finally:
            conn.execute(self._busy_timeout_pragma)

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        """`BEGIN IMMEDIATE` ... `COMMIT`, or `ROLLBACK` on any error: every write, and
        the migrations (the write lock serialises migrators)."""
        self._begin_immediate(conn)
        try:
            yield
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    _migration_lock = _transaction

    def _refuse_read_only(self, doing: str) -> None:
        if self._read_only:
            raise StoreError(
                f"SQLite store {self._url!r} was opened read-only; {doing} needs a writable "
                "store: open it without read_only"
            )

    @contextmanager
    def _write(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it commits, or none of it does."""
        self._refuse_read_only(doing)
        with self._lock, self._translate(doing):
            conn = self._connection()
            with self._transaction(conn):
                yield conn

    @contextmanager
    def _read(self, doing: str) -> Iterator[sqlite3.Connection]:
        with self._lock, self._translate(doing):
            yield self._connection()

    def _run(self, name: str, params: Mapping[str, object], doing: str, *,
             write: bool = False) -> tuple[list[Row], int]:
        released: list[str] = []
        with self._write(doing) if write else self._read(doing) as conn:
            cursor = conn.execute(sql(name), params)
            rows, count = cursor.fetchall(), cursor.rowcount
            if name in _ENDING_ONE and rows and rows[0][0] is not None:
                released = self._released_queues(conn, [rows[0][0]], params["now"])
        if released:
            self._wake_others(released)
        return rows, count

    @staticmethod
    def _released_queues(conn: sqlite3.Connection, settled: Sequence[int],
                         now: object) -> list[str]:
        """Inside the write transaction that finished `settled` (jobs with children) at
        `now` (as stored): the Queues of the jobs their ends made claimable, for
        `_wake_others` after the commit (released_queues.sql)."""
        rows = conn.execute(sql("released_queues"), {
            "parents": json.dumps(list(settled)), "now": now}).fetchall()
        return [queue for (queue,) in rows]

    def _wake_others(self, queues: Sequence[str] | None = None) -> None:
        """After a commit that added jobs (or, given `queues`, made jobs of those Queues
        claimable again): wake the watchers of other processes now, not at their poll."""
        if self._wake is not None and (queues is None or queues):
            self._wake.send(queues or ())

    def listen(self, on_enqueue: Callable[[str], None]) -> Callable[[], None]:
        """Wake-up hints for enqueues made by other processes sharing the file.

        The watcher reads `data_version` when another process's enqueue wakes it through
        a Unix datagram socket beside the file (`<db>.rota-wake/`: about a millisecond),
        and every 20 ms anyway, the safety net for enqueues that send no wake-up (a
        transactional `enqueue_on`, Windows, a directory rota may not write). A requeue, a
        resume or a limit change in another process adds no job to find: its datagram
        names the Queues, which are hinted as they arrive (without a datagram, the
        worker's own poll finds that work). An optimisation only: polling stays the truth.

        Returns:
            A function that stops the watcher and closes its connection.
        """
        watcher = _EnqueueWatcher(self, on_enqueue)
        watcher.start()
        return watcher.stop

    def _tell_finished(self) -> None:
        """After a commit that finished jobs: wake the finish watchers of every process
        (this one's included) now, not at their next `data_version` read."""
        if self._finish_wake is not None:
            self._finish_wake.send()

    def listen_finished(self, on_finished: Callable[[], None]) -> Callable[[], None]:
        """Call `on_finished()` after commits to the file that may have finished jobs
        (`FinishSource`), from a watcher thread with its own connection: after any commit
        by any connection (a change of `data_version`, read every 20 ms), and about a
        millisecond after a commit that finished jobs, which sends a datagram to the
        finish watchers beside the file (`<db>.rota-wake/*.wait`). A read-only store, or
        a directory rota may not write, leaves the 20 ms read alone.

        Returns:
            A function that stops the watcher and closes its connection.
        """
        watcher = _FinishWatcher(self, on_finished)
        watcher.start()
        return watcher.stop

    def job_states(self, job_ids: Sequence[int]) -> dict[int, JobState]:
        if not job_ids:
            return {}
        rows, _ = self._run("job_states", {"ids": json.dumps(list(job_ids))},
                            "reading the states of jobs")
        return {job_id: STATES[state] for job_id, state in rows}

    # -- upkeep -------------------------------------------------------------------------

    def checkpoint_wal(self) -> int:
        """Fold the -wal file back into the database, as far as readers allow, without
        waiting (a PASSIVE checkpoint); once all of it is folded back, the next write
        starts the WAL over, truncated to 4 MiB. Workers call it on a cadence
        (`rota.worker.checkpoint`); a read-only store does nothing. Returns the WAL frames
        left to fold back because readers still use them (0: the whole WAL is folded)."""
        if self._read_only:
            return 0
        with self._read("checkpointing the WAL") as conn:
            row = conn.execute(sql("wal_checkpoint")).fetchone()
        _busy, wal_frames, folded = row
        return max(int(wal_frames) - int(folded), 0)

    def storage_health(self) -> StorageHealth:
        """The size of the -wal file (`StorageReporting`): a `stat`, no query. A WAL that
        only grows is one a reader keeps from being checkpointed (rota.core.storage_health);
        0 when the file does not exist (no writer since the last clean close)."""
        wal = f"{self._path}-wal"
        try:
            size = os.stat(wal).st_size
        except FileNotFoundError:
            size = 0
        except OSError as error:
            raise StoreError(f"SQLite store {self._url!r}: cannot read the size of {wal}: "
                             f"{error}") from error
        return StorageHealth(wal_file=wal, wal_bytes=size)

    def close(self) -> None:
        """Close the connection; idempotent. Later calls raise StoreError."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._wake is not None:
                self._wake.close()
            if self._finish_wake is not None:
                self._finish_wake.close()
