"""The PostgreSQL store's URL and connections: rota's options and libpq's, the pool, the
dedicated connections (migrations, LISTEN), errors as `StoreError`, and migrations.

Every call is ONE statement on an autocommit connection from the pool: one round trip and
one implicit transaction, so a connection error never leaves half a write behind (the few
transactions say why they need one). Migrations run on first use under a
transaction-level advisory lock, so many nodes starting at once migrate exactly once.

A call made under a `call_deadline` ends at it with `StoreTimeout` (watchdog.py says how),
and every connection carries TCP keepalives.

Imports the store contract, the shared SQL base, the watchdog, psycopg and psycopg_pool.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ClassVar, Final, NoReturn, Self
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import psycopg_pool
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow

from rota.core.jobs import JobState
from rota.store.base import StoreConfigError, StoreError
from rota.store.deadlines import call_deadline
from rota.store.postgres.floors import ClaimFloors
from rota.store.postgres.retry import retried
from rota.store.postgres.schema import (
    FILES,
    PLANNED_EACH_RUN,
    advisory_lock_key,
    render,
    render_sql,
    text_array,
    utc,
)
from rota.store.postgres.watchdog import Call, timeout_error, with_keepalives
from rota.store.sql_base import Migration, Row, SqlStore
from rota.store.urls import mask_url

log = logging.getLogger(__name__)

DEFAULT_SCHEMA: Final = "rota"
EXPECTED_FORM: Final = (
    "expected postgresql://user:password@host:5432/database (or postgres://...), "
    "optionally with ?schema=name&pool_min_size=1&pool_max_size=10"
)
# Lowercase, unquoted-identifier style, short enough that "<schema>_enqueue" stays within
# PostgreSQL's 63-byte identifier limit (the NOTIFY channel name).
_SCHEMA_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,54}")
_OUR_QUERY_KEYS: Final = frozenset({"schema", "pool_min_size", "pool_max_size"})


def parse_url(url: str) -> tuple[str, dict[str, str]]:
    """Split `url` into a libpq conninfo URL and rota's own options.

    Raises:
        StoreConfigError: naming the masked URL and the expected form.
    """
    def bad(problem: str) -> NoReturn:
        raise StoreConfigError(f"store URL {mask_url(url)!r}: {problem}; {EXPECTED_FORM}")

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port validates it
    except ValueError as error:
        # urllib's message may quote part of an un-encoded password ("Port could not be
        # cast to integer value as 'pa'"): name the usual cause instead of repeating it.
        kind = "an invalid port" if "port" in str(error).lower() else "not a valid URL"
        bad(f"{kind}; if the password holds characters like @ : / # ? [ ], "
            "percent-encode them (urllib.parse.quote(password, safe=''))")
    if parts.scheme.lower() not in {"postgresql", "postgres"}:
        bad(f"the scheme must be postgresql:// or postgres://, not {parts.scheme!r}")
    if not parts.hostname and "host=" not in parts.query:
        bad("the host is missing")
    if not parts.path.strip("/"):
        bad("the database name is missing")
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in _OUR_QUERY_KEYS:
            ours[key] = value
        else:
            theirs.append((key, value))
    conninfo = urlunsplit(parts._replace(scheme="postgresql", query=urlencode(theirs)))
    # libpq's own parser: an unknown parameter (?foo=bar) is a usage error now, with the
    # URL named, not a failure at first connect.
    problem = None
    try:
        conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError as error:
        problem = str(error).strip() or type(error).__name__
    if problem is not None:
        bad(f"{problem}; the query parameters rota takes are schema, pool_min_size and "
            "pool_max_size, and libpq's own connection parameters (e.g. sslmode, "
            "connect_timeout, application_name)")
    return conninfo, ours


def check_schema(schema: str, url: str) -> str:
    if not isinstance(schema, str) or not _SCHEMA_NAME.fullmatch(schema):
        raise StoreConfigError(
            f"store URL {mask_url(url)!r}: schema {schema!r} must be a lowercase identifier "
            "(letters, digits, underscores, not starting with a digit, at most 55 characters)"
            f"; {EXPECTED_FORM}"
        )
    return schema


def pool_size(value: str | int, what: str, url: str) -> int:
    try:
        size = int(value)
    except ValueError:
        size = 0
    if size < 1:
        raise StoreConfigError(
            f"store URL {mask_url(url)!r}: {what} must be a whole number >= 1; got "
            f"{value!r}; {EXPECTED_FORM}"
        )
    return size


def mask(url_or_conninfo: str) -> str:
    """A URL or a key=value conninfo string with its password masked."""
    if "://" in url_or_conninfo:
        return mask_url(url_or_conninfo)
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url_or_conninfo)


CONNECT_TIMEOUT_S: Final = 10
# How long a call waits for a free pooled connection before failing with StoreError.
POOL_TIMEOUT_S: Final = 30.0

Connection = psycopg.Connection[TupleRow]

# How old a pooled connection's cached plans may be when it goes back to the pool; older,
# they are dropped there (DISCARD PLANS, by the pool's own thread, so no caller waits a
# round trip for it) and each statement is planned again at its next run. A generic plan
# is made for the jobs table as it is then and rebuilt only after ANALYZE, so without this
# a worker started on a near-empty table would keep its table scans while the table grows
# (docs/decisions/0056).
REPLAN_AFTER_S: Final = 1.0
# The longest the pool's thread waits for DISCARD PLANS before it drops the connection.
REPLAN_DEADLINE_S: Final = 5.0


class PlannedConnection(psycopg.Connection[TupleRow]):
    """A pooled connection that remembers when its cached plans were last dropped."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.planned_at = time.monotonic()


class PostgresConnection(SqlStore[Connection]):
    """The store's pool and connections; `PostgresStore` documents the arguments."""

    _files = FILES
    _END_LEASE: ClassVar[Mapping[JobState, str]] = dict.fromkeys(
        (JobState.DEAD_LETTERED, JobState.QUARANTINED, JobState.CANCELLED), "end_lease")
    _EXPIRE_LEASE: ClassVar[tuple[str, str]] = ("expire_lease", "expire_lease")
    _to_db_time = staticmethod(utc)

    def _from_db_time(self, value: datetime, /) -> datetime:
        return value  # timestamptz, in UTC (`_configure`)

    def _from_db_parents(self, value: list[int] | None, /) -> tuple[int, ...]:
        return () if value is None else tuple(value)  # bigint[], NULL without parents

    @staticmethod
    def _text_list(texts: Sequence[str], /) -> str:
        return text_array(texts)  # a text[] literal, cast in the SQL (decision 0012)

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        pool_min_size: int = 1,
        pool_max_size: int = 10,
        url: str | None = None,
        read_only: bool = False,
    ) -> None:
        self._url = mask(url if url is not None else conninfo)
        self._read_only = read_only
        self._conninfo = with_keepalives(conninfo)
        self._schema = check_schema(schema, self._url)
        self._schema_label = f"PostgreSQL store {self._url!r}: schema {self._schema!r}"
        if pool_min_size < 1 or pool_max_size < pool_min_size:
            raise StoreConfigError(
                f"store URL {self._url!r}: need 1 <= pool_min_size <= pool_max_size; got "
                f"{pool_min_size} and {pool_max_size}; {EXPECTED_FORM}"
            )
        self.channel: Final = f"{schema}_enqueue"
        self._hints = {"channel": self.channel}
        self._queries: dict[str, str] = {}
        self.claim_floors = ClaimFloors()
        self.replan_after_s = REPLAN_AFTER_S
        self._ready = False
        self._ready_lock = threading.Lock()
        self._pool_open = False
        self._pool_lock = threading.Lock()
        # The stop functions of the listeners running, which `close` calls.
        self._listeners: set[Callable[[], None]] = set()
        self._listeners_lock = threading.Lock()
        self._closed = False
        self._pool: psycopg_pool.ConnectionPool[PlannedConnection] = psycopg_pool.ConnectionPool(
            self._conninfo,
            min_size=pool_min_size,
            max_size=pool_max_size,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
            connection_class=PlannedConnection,
            configure=self._configure,
            reset=self._replan_if_stale,
            timeout=POOL_TIMEOUT_S,
            name=f"rota-{schema}",
            open=False,
        )

    @classmethod
    def from_url(cls, url: str, *, read_only: bool = False) -> Self:
        """Open the store that `url` names: `postgresql://user:password@host:port/database`
        (or `postgres://`), with optional query parameters `schema` (default `rota`),
        `pool_min_size` (1) and `pool_max_size` (10); any other is passed to libpq (e.g.
        `sslmode=require`, or `keepalives_idle=30` over rota's keepalive defaults:
        watchdog.KEEPALIVES). A malformed URL raises StoreConfigError, password masked."""
        conninfo, options = parse_url(url)
        return cls(
            conninfo,
            schema=options.get("schema", DEFAULT_SCHEMA),
            pool_min_size=pool_size(options.get("pool_min_size", 1), "pool_min_size", url),
            pool_max_size=pool_size(options.get("pool_max_size", 10), "pool_max_size", url),
            url=url, read_only=read_only,
        )

    @property
    def schema(self) -> str:
        return self._schema

    def __repr__(self) -> str:
        return f"PostgresStore({self._url!r}, schema={self._schema!r})"

    # -- connections ----------------------------------------------------------------------

    @staticmethod
    def _configure(conn: Connection) -> None:
        # A new connection whose link dies now must not hang the thread opening it (one of
        # the pool's, or a listener's): the set-up has the connect timeout as deadline.
        with call_deadline(CONNECT_TIMEOUT_S), Call().watch(conn):
            PostgresConnection._set_up(conn)

    @staticmethod
    def _set_up(conn: Connection) -> None:
        # Timestamps come back as UTC datetimes, whatever the server's TimeZone.
        conn.execute("SET TIME ZONE 'UTC'")
        # psycopg prepares a statement after a few runs, but PostgreSQL still re-plans a
        # prepared claim on every run (its custom plans look cheaper than the generic
        # one): ~0.25 ms of a ~1.2 ms claim. Every statement of this store has a sound
        # generic plan (index scans by primary key, by jobs_claimable or by
        # jobs_lease_expiry; claim.sql says how it gets one), so plan once per
        # connection (docs/decisions/0010). Plans are still rebuilt whenever ANALYZE
        # changes the table's statistics.
        conn.execute("SET plan_cache_mode = force_generic_plan")

    def _connect(self) -> Connection:
        """A dedicated connection (migrations, LISTEN), outside the pool."""
        try:
            conn = psycopg.connect(
                self._conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
            )
        except psycopg.Error as error:
            self._fail("connect", error)
        try:
            self._configure(conn)
        except psycopg.Error as error:
            conn.close()
            self._fail("connect", error)
        return conn

    def _fail(self, doing: str, error: BaseException) -> NoReturn:
        """Raise `error` as a StoreError naming the masked URL."""
        # The cause is named in the message itself: the CLI prints one line and no
        # traceback, so "see the cause below" would point at nothing.
        lines = [part.strip() for part in str(error).strip().splitlines() if part.strip()]
        detail = f"{type(error).__name__}: {' '.join(lines)}" if lines else type(error).__name__
        if isinstance(error, psycopg.OperationalError | psycopg_pool.PoolTimeout):
            hint = (
                "; check that PostgreSQL is running and reachable at this URL "
                f"({EXPECTED_FORM})"
            )
        else:
            hint = ""
        raise StoreError(
            f"PostgreSQL store {self._url!r} failed to {doing}: {detail}{hint}"
        ) from error

    def _refuse_closed(self) -> None:
        if self._closed:
            raise StoreError(f"PostgreSQL store {self._url!r} is closed; open a new one")

    def _query(self, name: str) -> str:
        query = self._queries.get(name)
        if query is None:
            query = self._queries[name] = render_sql(name, self._schema)
        return query

    @contextmanager
    def _cursor(self, doing: str, *, client_side: bool = False, schema: bool = True
                ) -> Iterator[psycopg.Cursor[TupleRow]]:
        """A cursor on a pooled connection; psycopg and pool errors become StoreError.
        `client_side`: one that binds parameters itself (see PLANNED_EACH_RUN). `schema`
        False: for a statement that reads no table (the schema is not made ready first).
        A call is its statements' round trips alone: stale plans are dropped as the
        connection goes back to the pool (`_replan_if_stale`), not before a call."""
        self._refuse_closed()
        if schema:
            self._ensure_ready()
        else:
            self._ensure_pool()
        call = Call()  # this thread's deadline, if any (watchdog.py)
        try:
            with self._pool.connection(call.pool_timeout(POOL_TIMEOUT_S)) as conn, \
                    call.watch(conn), \
                    (psycopg.ClientCursor(conn) if client_side else conn.cursor()) as cursor:
                yield cursor
        except psycopg.Error as error:  # PoolTimeout and PoolClosed included
            if call.timed_out(error):
                if call.fired:  # the idle connections took the same path: replace them too
                    self._pool.drain()
                raise timeout_error(self._url, doing, call) from error
            if isinstance(error, psycopg.OperationalError) and not isinstance(
                error, psycopg_pool.PoolTimeout | psycopg_pool.PoolClosed
            ):
                # The server may have restarted: drop the pool's dead idle connections now
                # so the next call gets a live one instead of failing again. A call with a
                # deadline replaces them unchecked (a check could hang on a dead one), and
                # none after a deadlock or serialization failure (the link is fine).
                if call.at is None:
                    self._check_pool()
                elif not (error.sqlstate or "").startswith("40"):  # class 40: rolled back
                    self._pool.drain()
            self._fail(doing, error)

    def _replan_if_stale(self, conn: PlannedConnection) -> None:
        """The pool's reset, as `conn` comes back: drop its cached plans if they are older
        than `replan_after_s` (only the thread holding a connection touches its
        `planned_at`). Run by one of the pool's threads, within `REPLAN_DEADLINE_S`: an
        error (the watchdog's included) makes the pool discard the connection."""
        now = time.monotonic()
        if now - conn.planned_at >= self.replan_after_s:
            with call_deadline(REPLAN_DEADLINE_S), Call().watch(conn):
                conn.execute("DISCARD PLANS")
            conn.planned_at = now

    def _check_pool(self) -> None:
        try:
            self._pool.check()
        except psycopg.Error:
            log.debug("pool check after a connection error failed", exc_info=True)

    def _run(self, name: str, params: Mapping[str, object], doing: str = "", *,
             write: bool = False) -> tuple[list[Row], int]:
        """Run the named statement, as its own transaction (retried after a deadlock:
        rota.store.postgres.retry); its rows (if any) and its row count. Messages name
        the statement, not `doing`."""
        return retried(lambda: self._run_once(name, params))

    def _run_once(self, name: str, params: Mapping[str, object]) -> tuple[list[Row], int]:
        with self._cursor(name.replace("_", " "),
                          client_side=name in PLANNED_EACH_RUN) as cursor:
            cursor.execute(self._query(name), params)
            # `rownumber`, not `description`: the same test (a result with rows), without
            # building a Column per column of the claim's rows on every call.
            rows = cursor.fetchall() if cursor.rownumber is not None else []
            return rows, cursor.rowcount

    # -- migrations -----------------------------------------------------------------------

    def _ensure_ready(self) -> None:
        if self._ready:
            return
        with self._ready_lock:
            if not self._ready:
                if self._read_only:
                    self._refuse_missing_schema()
                self.migrate()
                self._ensure_pool()
                self._ready = True

    def _ensure_pool(self) -> None:
        with self._pool_lock:
            if not self._pool_open:
                self._pool.open(wait=False)
                self._pool_open = True

    def schema_version(self) -> int:
        """The migration version of the database's schema (0: not created yet)."""
        with self._connect() as conn:
            try:
                return self._schema_version_on(conn)
            except psycopg.Error as error:
                self._fail("read the schema version", error)

    def _refuse_missing_schema(self) -> None:
        """A store opened read-only is never created or migrated: a schema behind this
        rota's is an error naming the fix (a newer one fails in `migrate` as usual)."""
        version, known = self.schema_version(), self.known_schema_version()
        if version < known:
            raise StoreError(
                f"{self._schema_label} has schema version {version}, this rota needs "
                f"{known}; a read command never creates or migrates a store: run `rota "
                "migrate` (or start a worker) first, or check the URL")

    def migrate(self) -> list[int]:
        """Apply the migrations the database lacks; return the versions applied.

        Safe to call from many nodes at once: they serialise on an advisory lock, and
        exactly one applies each migration. Called automatically on first use.

        Raises:
            SchemaTooNew: if the database was migrated by a newer rota.
            StoreError: if PostgreSQL is unreachable or a migration fails (nothing of that
                migration run is kept: it is one transaction).
        """
        with self._connect() as conn:
            try:
                applied = self._migrate_on(conn)
            except psycopg.Error as error:
                self._fail("migrate", error)
        if applied:
            log.info("migrated %s schema %r: applied %s", self._url, self._schema, applied)
        return applied

    def _schema_version_on(self, conn: Connection) -> int:
        exists = conn.execute(
            self._query("schema_ledger_exists"),
            {"ledger": f'"{self._schema}".schema_migrations'},
        ).fetchone()
        if exists is None or not exists[0]:
            return 0
        row = conn.execute(self._query("schema_version")).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else 0

    @contextmanager
    def _migration_lock(self, conn: Connection) -> Iterator[None]:
        with conn.transaction():
            conn.execute(self._query("migrate_lock"),
                         {"lock_key": advisory_lock_key(self._schema)})
            conn.execute(self._query("migrate_prepare"))
            yield

    def _apply_migration(self, conn: Connection, migration: Migration) -> None:
        for statement in migration.statements:
            conn.execute(render(statement, self._schema))
        conn.execute(self._query("migrate_record"),
                     {"version": migration.version, "description": migration.description})

    def close(self) -> None:
        """Stop every listener and close every connection. Idempotent."""
        self._closed = True
        with self._listeners_lock:
            stops, self._listeners = list(self._listeners), set()
        for stop in stops:
            stop()
        self._pool.close()
