"""The `postgresql://` store: the contract on PostgreSQL, for many worker machines.

Theory of operation:
- Every method is ONE SQL statement on an autocommit connection from a
  `psycopg_pool.ConnectionPool`: one round trip, and one implicit transaction, so a
  connection error never leaves half a write behind. Batched methods (`enqueue`,
  `complete`, `release`, `heartbeat`) pass columns as arrays and `unnest` them.
- Claims lock due jobs with `FOR UPDATE SKIP LOCKED`, walking the partial index
  `jobs_claimable (queue, due_at, id) WHERE state = 'scheduled'`, so finished rows never
  slow them down. Time is an input: no statement reads the server's clock.
- Queue controls: every claim reads `queue_settings` (no cache) and skips paused Queues.
  The one exception to "one statement": a claim over a Queue with a concurrency limit is
  a transaction that locks the Queue's settings row, then claims with a snapshot taken
  after that lock (claim_limited.sql says why). Claims over Queues without a limit never
  take that path (claim.sql signals it with a row of NULLs).
- Pooled connections run with `plan_cache_mode = force_generic_plan`: each statement,
  prepared by psycopg after a few runs, is planned once per connection rather than on
  every run (see `_configure`).
- The schema lives in its own PostgreSQL schema (default `rota`). Versioned migrations
  (`sql/postgres/migration_NNNN_*.sql`) are applied on first use under a transaction-level
  advisory lock, so many nodes starting at once migrate exactly once; a database migrated
  by a newer rota is refused with `SchemaTooNew`.
- `enqueue` sends one NOTIFY per Queue touched on the channel `<schema>_enqueue`, and so
  do a requeue, a resume and a limit change (work claimable again, for other processes);
  `listen` runs a thread with a dedicated connection that turns them into callbacks.
- All SQL lives in named files under `sql/postgres/`, loaded with importlib.resources.

Imports the core, the store contract, psycopg and psycopg_pool; never the worker or app.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import select
import socket
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from functools import cache, lru_cache
from importlib import resources
from typing import Final, NoReturn
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import psycopg_pool
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow, tuple_row

from rota.core.jobs import (
    CANCELLED_ON_REQUEST,
    JobRecord,
    JobState,
    Lease,
    NewJob,
    check_new_jobs,
    check_requeueable,
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
from rota.store import mask_url
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

__all__ = ["DEFAULT_SCHEMA", "SCHEMA_VERSION", "PostgresStore"]

log = logging.getLogger(__name__)

DEFAULT_SCHEMA: Final = "rota"
EXPECTED_FORM: Final = (
    "expected postgresql://user:password@host:5432/database (or postgres://...), "
    "optionally with ?schema=name&pool_min_size=1&pool_max_size=10"
)
CONNECT_TIMEOUT_S: Final = 10
# How long a call waits for a free pooled connection before failing with StoreError.
POOL_TIMEOUT_S: Final = 30.0
# Lowercase, unquoted-identifier style, short enough that "<schema>_enqueue" stays within
# PostgreSQL's 63-byte identifier limit (the NOTIFY channel name).
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,54}")
_OUR_QUERY_KEYS: Final = frozenset({"schema", "pool_min_size", "pool_max_size"})
_MIGRATION_FILE = re.compile(r"migration_(\d{4})_(\w+)\.sql")


# -- SQL files ---------------------------------------------------------------------------


def _sql_dir() -> resources.abc.Traversable:
    return resources.files("rota.store").joinpath("sql", "postgres")


@cache
def _sql_text(name: str) -> str:
    """The statement of that name as sent: its file (or, for a claim that completes,
    two files composed) without whole-line comments. psycopg parses a statement's
    placeholders on every execution unless its text is at most 4,096 bytes (its
    `MAX_CACHED_STATEMENT_LENGTH`); with its comments, claim.sql is over that."""
    if name in CLAIM_COMPLETING:
        text = _claim_completing_text(CLAIM_COMPLETING[name])
    else:
        text = _sql_file(name)
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.lstrip().startswith("--"))


def _sql_file(name: str) -> str:
    return _sql_dir().joinpath(f"{name}.sql").read_text(encoding="utf-8")


# A claim that also completes a batch of successes, in one statement: claim.sql with
# complete.sql (or complete_results.sql) as its first CTE (`completed`), and a first row
# (position -1, id NULL) whose attempt column is how many jobs it completed. The CTEs
# share one snapshot and touch different rows (the completed are leased, the claimed
# scheduled), so it applies and claims exactly as the two statements would in one
# transaction (docs/benchmarks.md, "PostgreSQL: the count triggers, ..."). The name of
# each composed statement, and the outcome statement it carries:
CLAIM_COMPLETING: Final = {"claim_completing": "complete",
                           "claim_completing_results": "complete_results"}
_COMPLETING: Final = {complete: claim for claim, complete in CLAIM_COMPLETING.items()}


def _claim_completing_text(complete_name: str) -> str:
    claim, complete = _sql_file("claim"), _sql_file(complete_name)
    first = "-- claim_completing: completed AS (complete.sql RETURNING jobs.id),\n"
    last = "    -- claim_completing: UNION ALL the count of completed (in attempt, id NULL)\n"
    if first not in claim or last not in claim:  # a packaging mistake, never user input
        raise RuntimeError("claim.sql lost the places marked for claim_completing")
    return (claim
            .replace(first, f"completed AS (\n{complete}    RETURNING jobs.id\n),\n")
            .replace(last, "    UNION ALL\n    SELECT -1, NULL, NULL, NULL, count(*)::int, NULL, "
                           "NULL, NULL, NULL, NULL, NULL\n    FROM completed\n"))


def render_sql(name: str, schema: str) -> str:
    """The named SQL file with `{schema}` replaced by `schema`, quoted as an identifier."""
    composed = sql.SQL(_sql_text(name)).format(schema=sql.Identifier(schema))
    return composed.as_string(None)


@cache
def migrations() -> tuple[tuple[int, str, str], ...]:
    """Every migration this rota knows, as (version, description, file name), in order."""
    found: list[tuple[int, str, str]] = []
    for entry in _sql_dir().iterdir():
        match = _MIGRATION_FILE.fullmatch(entry.name)
        if match:
            found.append((int(match[1]), match[2].replace("_", " "), entry.name[:-4]))
    found.sort()
    versions = [version for version, _, _ in found]
    if versions != list(range(1, len(found) + 1)):  # a packaging mistake, never user input
        raise RuntimeError(f"rota's PostgreSQL migrations must be numbered 1..n; {versions}")
    return tuple(found)


SCHEMA_VERSION: Final = len(migrations())


# Admin listings, sent with their values bound client-side (the simple query protocol,
# which no plan cache touches), so PostgreSQL plans them with the values: their optional
# filters (`%(queue)s IS NULL OR queue = ...`) and their LIMIT are unknown to a generic
# plan (`plan_cache_mode`, see `_configure`, applies to unnamed statements too), which
# then expects a tenth of the table and, on a big one, starts parallel workers for a
# page of 50: 13-46 ms on ten million rows, against 0.5 ms planning + 0.1 ms running.
_PLANNED_EACH_RUN: Final = frozenset({"list_jobs", "list_jobs_newest", "list_jobs_finished"})


def _advisory_lock_key(schema: str) -> int:
    """A stable signed 64-bit key for the migration lock of `schema`."""
    digest = hashlib.blake2b(f"rota.migrate:{schema}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


# -- URL ---------------------------------------------------------------------------------


def _parse_url(url: str) -> tuple[str, dict[str, str]]:
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


def _check_schema(schema: str, url: str) -> str:
    if not isinstance(schema, str) or not _SCHEMA_NAME.fullmatch(schema):
        raise StoreConfigError(
            f"store URL {mask_url(url)!r}: schema {schema!r} must be a lowercase identifier "
            "(letters, digits, underscores, not starting with a digit, at most 55 characters)"
            f"; {EXPECTED_FORM}"
        )
    return schema


def _pool_size(value: str | int, what: str, url: str) -> int:
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


def _mask(url_or_conninfo: str) -> str:
    """A URL or a key=value conninfo string with its password masked."""
    if "://" in url_or_conninfo:
        return mask_url(url_or_conninfo)
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url_or_conninfo)


# -- rows --------------------------------------------------------------------------------


_STATES: Final = {state.value: state for state in JobState}


def _record(row: TupleRow) -> JobRecord:
    (job_id, name, queue, state, attempt, due_at, args_json, kwargs_json, last_error,
     created_at, lease_owner, lease_expires_at, started_at, result, cancel_requested,
     finished_at) = row[:16]
    key = row[16] if len(row) > 16 else None  # read paths add the unique-job key
    args, kwargs, arguments_error = decode_stored_arguments(args_json, kwargs_json)
    return JobRecord(
        id=job_id, name=name, queue=queue, state=_STATES[state], attempt=attempt,
        due_at=due_at, args=args, kwargs=kwargs, last_error=last_error,
        created_at=created_at, lease_owner=lease_owner, lease_expires_at=lease_expires_at,
        started_at=started_at, result=decode_result(result),
        cancel_requested=cancel_requested,
        arguments_error=arguments_error,
        finished_at=finished_at,
        key=key,
    )


def _leased_record(
    row: TupleRow, owner: str, lease_expires_at: datetime, started_at: datetime
) -> JobRecord:
    """A row of claim.sql, which leaves out what the claim itself set."""
    (job_id, name, queue, attempt, due_at, args_json, kwargs_json, last_error,
     created_at, trace_context) = row
    # A row that cannot be decoded gives a record with `arguments_error` set instead of
    # raising (rota.store.corrupt).
    args, kwargs, arguments_error = decode_stored_arguments(args_json, kwargs_json)
    # Every field in order (new_record: ~5x cheaper than JobRecord's keywords): finished_at,
    # result, cancel_requested and key are those of a job just leased.
    return new_record(
        job_id, name, queue, JobState.LEASED, attempt, due_at, args, kwargs, last_error,
        created_at, None, owner, lease_expires_at, started_at, None, False, arguments_error,
        None, trace_context,
    )


def _lease_columns(leases: Sequence[Lease]) -> dict[str, str]:
    """The leases as three array literals ('{7,8}', '{"w@h:1:ab","w@h:1:ab"}', '{1,1}'),
    cast in the SQL. psycopg's binary list dumpers run a Python loop per element (a
    `struct.pack` and two appends each, after a type survey of the list): ~4k instructions
    a job of a drain over the three arrays of `complete` (docs/benchmarks.md, "Worker
    instructions per job")."""
    return {
        "ids": "{" + ",".join([str(lease.job_id) for lease in leases]) + "}",
        "owners": _text_array([lease.owner for lease in leases], _quoted_owner),
        "attempts": "{" + ",".join([str(lease.attempt) for lease in leases]) + "}",
    }


def _quoted(text: str) -> str:
    """`text` as an element of an array literal: quoted, `"` and `\\` escaped."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# A process holds leases under a few owners (one per group): each quoted once.
_quoted_owner: Final = lru_cache(maxsize=256)(_quoted)


def _text_array(texts: Iterable[str], quote: Callable[[str], str] = _quoted) -> str:
    """A text[] literal of `texts`, cast in the SQL (see `_lease_columns`)."""
    return "{" + ",".join(map(quote, texts)) + "}"


def _retry_params(lease: Lease, now: datetime, due_at: datetime, error: str
                  ) -> dict[str, object]:
    """retry.sql's parameters."""
    return {
        "id": lease.job_id, "owner": lease.owner, "attempt": lease.attempt,
        "due_at": _utc(due_at, "due_at"), "error": error, "now": _utc(now, "now"),
        "cancelled_error": CANCELLED_ON_REQUEST,
    }


def _end_lease_params(lease: Lease, now: datetime, state: JobState, error: str
                      ) -> dict[str, object]:
    """end_lease.sql's parameters (dead letter, quarantine, cancel of a leased job)."""
    return {
        "id": lease.job_id, "owner": lease.owner, "attempt": lease.attempt,
        "state": state.value, "error": error, "now": now,
    }


def _enqueue_statement(params: Mapping[str, object]) -> str:
    """enqueue_traced.sql for a batch with trace contexts (enqueued inside a span), else
    the usual enqueue.sql."""
    return "enqueue_traced" if "trace_contexts" in params else "enqueue"


def _utc(moment: datetime, what: str) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{what} must be a timezone-aware datetime; got {moment!r}")
    return moment


# -- the store ---------------------------------------------------------------------------


class PostgresStore:
    """The `Store` contract on PostgreSQL (also a `WakeupSource`).

    Thread-safe: each call borrows its own pooled connection. Migrations run on first use
    (or explicitly with `migrate()`).
    """

    # A worker writes its outcomes with its outcome writer, on another pooled connection
    # while its next claim runs, rather than in the claim (`claim(..., outcomes=...)`
    # still works): with them, the claim every handler of the next pass waits for took
    # longer than the two statements side by side (docs/benchmarks.md, "Carried
    # outcomes: per store": 0.87 against 0.72 of 2d2c58e's drain, one worker).
    outcomes_beside_claims = True

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        pool_min_size: int = 1,
        pool_max_size: int = 10,
        url: str | None = None,
    ) -> None:
        """Open a store; no connection is made until first use.

        Args:
            conninfo: a libpq connection string or `postgresql://` URL (no rota options).
            schema: the PostgreSQL schema holding rota's tables (created if missing).
            pool_min_size: connections the pool keeps open.
            pool_max_size: most connections the pool opens (one per concurrent call).
            url: the URL to show in messages (password masked); defaults to `conninfo`.

        Raises:
            StoreConfigError: if `schema` or a pool size is not valid.
        """
        self._url = _mask(url if url is not None else conninfo)
        self._conninfo = conninfo
        self._schema = _check_schema(schema, self._url)
        if pool_min_size < 1 or pool_max_size < pool_min_size:
            raise StoreConfigError(
                f"store URL {self._url!r}: need 1 <= pool_min_size <= pool_max_size; got "
                f"{pool_min_size} and {pool_max_size}; {EXPECTED_FORM}"
            )
        self.channel: Final = f"{schema}_enqueue"
        self._queries: dict[str, str] = {}
        self._ready = False
        self._ready_lock = threading.Lock()
        self._listeners: set[_Listener] = set()
        self._listeners_lock = threading.Lock()
        self._closed = False
        self._pool: psycopg_pool.ConnectionPool[psycopg.Connection[TupleRow]] = (
            psycopg_pool.ConnectionPool(
                conninfo,
                min_size=pool_min_size,
                max_size=pool_max_size,
                kwargs=self._connect_kwargs(),
                configure=self._configure,
                timeout=POOL_TIMEOUT_S,
                name=f"rota-{schema}",
                open=False,
            )
        )

    @classmethod
    def from_url(cls, url: str) -> PostgresStore:
        """Open the store that `url` names.

        `postgresql://user:password@host:port/database` (or `postgres://`), with optional
        query parameters `schema` (default `rota`), `pool_min_size` (1) and `pool_max_size`
        (10); any other query parameter is passed to libpq (e.g. `sslmode=require`).

        Raises:
            StoreConfigError: if the URL is malformed; the message names it, password masked.
        """
        conninfo, options = _parse_url(url)
        return cls(
            conninfo,
            schema=options.get("schema", DEFAULT_SCHEMA),
            pool_min_size=_pool_size(options.get("pool_min_size", 1), "pool_min_size", url),
            pool_max_size=_pool_size(options.get("pool_max_size", 10), "pool_max_size", url),
            url=url,
        )

    @property
    def url(self) -> str:
        return self._url

    @property
    def schema(self) -> str:
        return self._schema

    def __repr__(self) -> str:
        return f"PostgresStore({self._url!r}, schema={self._schema!r})"

    # -- connections ----------------------------------------------------------------------

    @staticmethod
    def _connect_kwargs() -> dict[str, object]:
        return {"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S}

    @staticmethod
    def _configure(conn: psycopg.Connection[TupleRow]) -> None:
        # Timestamps come back as UTC datetimes, whatever the server's TimeZone.
        conn.execute("SET TIME ZONE 'UTC'")
        # psycopg prepares a statement after a few runs, but PostgreSQL still re-plans a
        # prepared claim on every run (its custom plans look cheaper than the generic
        # one): ~0.25 ms of a ~1.2 ms claim. Every statement of this store has a sound
        # generic plan (index scans by primary key, by jobs_claimable or by
        # jobs_lease_expiry; claim.sql says how it gets one), so plan once per
        # connection. Measured: PostgreSQL noop drain 7,876 -> 8,845 jobs/s (+12 %).
        # Plans are still rebuilt whenever ANALYZE changes the table's statistics.
        conn.execute("SET plan_cache_mode = force_generic_plan")

    def _connect(self) -> psycopg.Connection[TupleRow]:
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

    def _query(self, name: str) -> str:
        query = self._queries.get(name)
        if query is None:
            query = self._queries[name] = render_sql(name, self._schema)
        return query

    @contextmanager
    def _cursor(self, doing: str, *, client_side: bool = False
                ) -> Iterator[psycopg.Cursor[TupleRow]]:
        """A cursor on a pooled connection; psycopg and pool errors become StoreError.
        `client_side`: one that binds parameters itself (see _PLANNED_EACH_RUN)."""
        if self._closed:
            raise StoreError(f"PostgreSQL store {self._url!r} is closed; open a new one")
        self._ensure_ready()
        try:
            with self._pool.connection() as conn, (
                    psycopg.ClientCursor(conn) if client_side else conn.cursor()) as cursor:
                yield cursor
        except psycopg.Error as error:  # PoolTimeout and PoolClosed included
            if isinstance(error, psycopg.OperationalError) and not isinstance(
                error, psycopg_pool.PoolTimeout | psycopg_pool.PoolClosed
            ):
                # The server may have restarted: drop the pool's dead idle connections now
                # so the next call gets a live one instead of failing again.
                self._check_pool()
            self._fail(doing, error)

    def _check_pool(self) -> None:
        try:
            self._pool.check()
        except psycopg.Error:
            log.debug("pool check after a connection error failed", exc_info=True)

    def _execute(
        self, name: str, params: Mapping[str, object]
    ) -> tuple[list[TupleRow], int]:
        """Run the named statement; return its rows (if any) and its row count."""
        with self._cursor(name.replace("_", " "),
                          client_side=name in _PLANNED_EACH_RUN) as cursor:
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
                self.migrate()
                self._pool.open(wait=False)
                self._ready = True

    def schema_version(self) -> int:
        """The migration version of the database's schema (0: not created yet)."""
        with self._connect() as conn:
            try:
                return self._schema_version(conn)
            except psycopg.Error as error:
                self._fail("read the schema version", error)

    def _schema_version(self, conn: psycopg.Connection[TupleRow]) -> int:
        exists = conn.execute(
            self._query("schema_ledger_exists"),
            {"ledger": f'"{self._schema}".schema_migrations'},
        ).fetchone()
        if exists is None or not exists[0]:
            return 0
        row = conn.execute(self._query("schema_version")).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else 0

    def _refuse_if_too_new(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"PostgreSQL store {self._url!r}: schema {self._schema!r} is at migration "
                f"version {version}, but this rota knows versions up to {SCHEMA_VERSION}; "
                "a newer rota migrated this database. Upgrade rota on this host."
            )

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
                version = self._schema_version(conn)
                self._refuse_if_too_new(version)
                if version == SCHEMA_VERSION:
                    return []  # fast path: no lock for the usual start of a node
                with conn.transaction():
                    conn.execute(
                        self._query("migrate_lock"),
                        {"lock_key": _advisory_lock_key(self._schema)},
                    )
                    conn.execute(self._query("migrate_prepare"))
                    version = self._schema_version(conn)  # another node may have migrated
                    self._refuse_if_too_new(version)
                    applied: list[int] = []
                    for number, description, file_name in migrations():
                        if number <= version:
                            continue
                        conn.execute(self._query(file_name))
                        conn.execute(
                            self._query("migrate_record"),
                            {"version": number, "description": description},
                        )
                        applied.append(number)
                if applied:
                    log.info("migrated %s schema %r: applied %s", self._url, self._schema,
                             applied)
                return applied
            except psycopg.Error as error:
                self._fail("migrate", error)

    # -- writes ---------------------------------------------------------------------------

    def enqueue(self, jobs: Sequence[NewJob], now: datetime) -> list[int]:
        if not jobs:
            return []
        params = self._enqueue_params(jobs, now)
        if all(job.key is None for job in jobs):
            rows, _ = self._execute(_enqueue_statement(params), params)
            return [row[0] for row in rows]
        # Unique jobs: a few statements, so one transaction on the pooled connection.
        with self._cursor("enqueue") as cursor, cursor.connection.transaction():
            return self._enqueue_keyed(cursor, jobs, params)

    def _enqueue_keyed(
        self, cursor: psycopg.Cursor[TupleRow], jobs: Sequence[NewJob],
        params: dict[str, object],
    ) -> list[int]:
        """Enqueue a batch that has keys on `cursor` (inside a transaction): the
        statements of `_keyed_steps`, run one after another."""
        steps = self._keyed_steps(jobs, params)
        query, query_params = next(steps)
        while True:
            cursor.execute(query, query_params)
            try:
                query, query_params = steps.send(cursor.fetchall())
            except StopIteration as done:
                ids: list[int] = done.value
                return ids

    def _keyed_steps(
        self, jobs: Sequence[NewJob], params: dict[str, object],
    ) -> Generator[tuple[str, dict[str, object]], list[TupleRow], list[int]]:
        """The statements that enqueue a batch with keys, sans I/O: yields (query, params),
        is sent each statement's rows, returns the ids in input order (a job not inserted
        because a live job holds its name and key gets that job's id). The sync and the
        async enqueue on a caller's connection both drive it.

        Under READ COMMITTED each statement sees what committed before it started. The
        INSERT waits for a concurrent enqueuer of the same key and then skips its job;
        live_keys.sql, a later statement, sees that job. If the live job finished in
        between (the key is free again), the job is inserted in another round."""
        ids: list[int | None] = [None] * len(jobs)
        pending = list(range(len(jobs)))
        for _round in range(10):
            batch = [jobs[index] for index in pending]
            inserted = yield self._query("enqueue_keyed"), {
                **params,
                "names": [job.name for job in batch],
                "queues": [job.queue for job in batch],
                "due_ats": [job.due_at for job in batch],
                "args": [job.args_json for job in batch],
                "kwargs": [job.kwargs_json for job in batch],
                "keys": [job.key for job in batch],
                "trace_contexts": [job.trace_context for job in batch],
            }  # rows (id, name, key), in input order
            keyless = iter([row[0] for row in inserted if row[2] is None])
            by_key = {(row[1], row[2]): row[0] for row in inserted if row[2] is not None}
            missing: dict[tuple[str, str], list[int]] = {}
            for index in pending:
                job = jobs[index]
                if job.key is None:
                    ids[index] = next(keyless)
                elif (job.name, job.key) in by_key:
                    ids[index] = by_key[(job.name, job.key)]
                else:
                    missing.setdefault((job.name, job.key), []).append(index)
            if missing:
                holders = yield self._query("live_keys"), {
                    "names": [name for name, _ in missing],
                    "keys": [key for _, key in missing],
                }
                for name, key, job_id in holders:
                    for index in missing.pop((name, key), []):
                        ids[index] = job_id
            pending = sorted(index for indexes in missing.values() for index in indexes)
            if not pending:
                return [job_id for job_id in ids if job_id is not None]
        raise StoreError(
            f"PostgreSQL store {self._url!r}: unique jobs kept finishing while being "
            "enqueued (10 rounds); retry the enqueue"
        )

    def _enqueue_params(self, jobs: Sequence[NewJob], now: datetime) -> dict[str, object]:
        """enqueue.sql's parameters, after the checks every store makes."""
        check_new_jobs(jobs)  # the same jobs refused on every store
        # Arguments are JSON text from encode_arguments; the statement's ::json cast checks
        # them again, atomically (decoding them here too cost ~40% of enqueue time).
        # Array parameters are sent in binary (%(name)b): 10x cheaper to encode than text.
        for job in jobs:
            _utc(job.due_at, "due_at")
        params: dict[str, object] = {
            "now": _utc(now, "now"),
            "names": [job.name for job in jobs],
            "queues": [job.queue for job in jobs],
            "due_ats": [job.due_at for job in jobs],
            "args": [job.args_json for job in jobs],
            "kwargs": [job.kwargs_json for job in jobs],
            "channel": self.channel,
        }
        if any(job.trace_context is not None for job in jobs):  # enqueued inside a span
            params["trace_contexts"] = [job.trace_context for job in jobs]
        return params

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
        # A Queue named twice (without limits) would be walked twice, its rows counted
        # twice against the limit; the first mention decides its place.
        caps = claim_caps(queues, limit, limits)
        check_outcomes(outcomes)
        if limit <= 0 or not caps or all(cap <= 0 for _, cap in caps):
            if outcomes:
                _, found, applied = self._claim_with_outcomes(
                    None, list(probe), outcomes, _utc(now, "now"))
                return Claimed(due=[str(row[0]) for row in found if row[1]], applied=applied)
            if not probe:
                return Claimed()
            found, _ = self._execute("probe", {"probe": list(probe), "now": _utc(now, "now")})
            return Claimed(due=[str(row[0]) for row in found if row[1]])
        params = {
            "queues": _text_array([queue for queue, _ in caps]),
            # An int[] literal ('{20,5}'), cast in the SQL: psycopg's list-of-int dumper
            # picks an element type per call, ~10 us a claim (docs/benchmarks.md Levers).
            "limits": "{" + ",".join(str(min(cap, limit)) for _, cap in caps) + "}",
            "limit": limit,
            "now": _utc(now, "now"),
            "owner": owner,
            "lease_expires_at": _utc(lease_expires_at, "lease_expires_at"),
        }
        applied = 0
        probed: list[str] = []
        if probe or limits is not None:
            # A planner's claim: probe its Queues (and those asked) in the same round trip.
            probed = list(dict.fromkeys([*(queue for queue, _ in caps), *probe]))
        if outcomes:
            rows, found, applied = self._claim_with_outcomes(params, probed, outcomes, now)
        elif probed:
            rows, found = self._claim_and_probe(params, probed)
        else:
            rows, _ = self._execute("claim", params)
            found = []
        if rows and rows[0][0] is None:  # a Queue has a limit: claim.sql leased nothing
            # (With outcomes, they were committed by then: see the module doc of base.)
            rows = self._claim_limited(params)
            if probed:  # the probe ran before this claim: ask again what it left
                found, _ = self._execute("probe", {"probe": probed, "now": params["now"]})
        wanted = set(probe)
        return Claimed(
            quarantine_undecodable(
                self, [_leased_record(row, owner, lease_expires_at, now) for row in rows],
                now),
            due=[str(row[0]) for row in found if row[1] and row[0] in wanted],
            controlled=[str(row[0]) for row in found if row[2]],
            applied=applied,
        )

    def _claim_with_outcomes(
        self, params: Mapping[str, object] | None, probed: list[str],
        outcomes: Sequence[LeaseOutcome], now: datetime,
    ) -> tuple[list[TupleRow], list[TupleRow], int]:
        """The outcomes' statements, then claim.sql (unless `params` is None) and
        probe.sql (if `probed`), in one transaction sent as one pipeline: BEGIN, the
        statements and COMMIT go out together, one network round trip and one commit.
        Outcomes that are all successes (a drain's usual pass) ride in the claim
        statement itself (claim_completing); alone, that is one statement and needs no
        BEGIN or COMMIT.
        Returns the claim's rows, the probe's rows and how many outcomes were applied."""
        statements = self._outcome_statements(outcomes, now)
        claim_name, completing = "claim", False
        if params is not None and len(statements) == 1 and statements[0][0] in _COMPLETING:
            claim_name, completing = _COMPLETING[statements[0][0]], True
            params = {**statements[0][1], **params}
            statements = []
            if not probed:
                rows, _ = self._execute(claim_name, params)
                return rows[1:], [], rows[0][3]
        with self._cursor("claim") as cursor:
            conn = cursor.connection
            writes: list[psycopg.Cursor[TupleRow]] = []
            claimed = conn.cursor() if params is not None else None
            second = conn.cursor() if probed else None
            try:
                # BEGIN and COMMIT as plain statements: psycopg's transaction() syncs the
                # pipeline as it starts and ends (four round trips instead of one, counted).
                with conn.pipeline():
                    cursor.execute("BEGIN")
                    for name, statement_params in statements:
                        write = conn.cursor()
                        write.execute(self._query(name), statement_params)
                        writes.append(write)
                    if claimed is not None:
                        claimed.execute(self._query(claim_name), params)
                    if second is not None:
                        second.execute(self._query("probe"), {"probe": probed, "now": now})
                    cursor.execute("COMMIT")
            except psycopg.Error:
                # A failed statement aborts the transaction, and the pipeline skips the
                # rest (COMMIT included): roll back rather than hand the pool a failed
                # transaction.
                with suppress(psycopg.Error):
                    conn.rollback()
                raise
            applied = sum(write.rowcount for write in writes)
            rows = claimed.fetchall() if claimed is not None else []
            if completing:
                applied, rows = rows[0][3], rows[1:]
            found = second.fetchall() if second is not None else []
            return rows, found, applied

    @staticmethod
    def _outcome_statements(
        outcomes: Sequence[LeaseOutcome], now: datetime
    ) -> list[tuple[str, dict[str, object]]]:
        """The statements that apply `outcomes`, as `complete`, `retry` and the other
        outcome methods run them: every success in one statement."""
        statements: list[tuple[str, dict[str, object]]] = []
        successes = [(lease, outcome.result_json) for lease, outcome in outcomes
                     if isinstance(outcome, Succeeded)]
        if successes:
            leases = [lease for lease, _ in successes]
            results = [result for _, result in successes]
            if all(result is None for result in results):
                statements.append(("complete", {"now": now, **_lease_columns(leases)}))
            else:
                statements.append(("complete_results", {
                    "now": now, "results": results, **_lease_columns(leases)}))
        for lease, outcome in outcomes:
            if isinstance(outcome, RetryAt):
                statements.append(("retry", _retry_params(lease, now, outcome.due_at,
                                                          outcome.error)))
            elif not isinstance(outcome, Succeeded):
                state = (JobState.DEAD_LETTERED if isinstance(outcome, DeadLettered) else
                         JobState.CANCELLED if isinstance(outcome, Cancelled) else
                         JobState.QUARANTINED)
                statements.append(("end_lease", _end_lease_params(lease, now, state,
                                                                  outcome.error)))
        return statements

    def _claim_and_probe(
        self, params: Mapping[str, object], probed: list[str]
    ) -> tuple[list[TupleRow], list[TupleRow]]:
        """claim.sql and probe.sql pipelined: one network round trip; the probe runs after
        the claim (each its own transaction), so it sees what the claim left."""
        with self._cursor("claim") as cursor:
            conn = cursor.connection
            with conn.pipeline(), conn.cursor() as second:
                cursor.execute(self._query("claim"), params)
                second.execute(self._query("probe"), {"probe": probed, "now": params["now"]})
                rows = cursor.fetchall()
                found = second.fetchall()
            return rows, found

    def _claim_limited(self, params: Mapping[str, object]) -> list[TupleRow]:
        """A claim over Queues of which some have a concurrency limit: lock their settings
        rows, then claim with a snapshot taken after the lock (claim_limited.sql says why),
        in one transaction."""
        with self._cursor("claim") as cursor, cursor.connection.transaction():
            cursor.execute(self._query("claim_limited_plan"))
            cursor.execute(self._query("lock_queue_limits"), {"queues": params["queues"]})
            cursor.execute(self._query("claim_limited"), params)
            return cursor.fetchall()

    def complete(
        self, leases: Sequence[Lease], now: datetime,
        results: Sequence[str | None] | None = None,
    ) -> int:
        if not leases:
            return 0
        if results is None or all(result is None for result in results):
            _, count = self._execute("complete", {"now": now, **_lease_columns(leases)})
            return count
        if len(results) != len(leases):
            raise ValueError(f"complete got {len(leases)} leases but {len(results)} results")
        _, count = self._execute("complete_results", {
            "now": now, "results": list(results), **_lease_columns(leases),
        })
        return count

    def retry(self, lease: Lease, now: datetime, due_at: datetime, error: str) -> bool:
        _, count = self._execute("retry", _retry_params(lease, now, due_at, error))
        return count == 1

    def _end_lease(self, lease: Lease, now: datetime, state: JobState, error: str) -> bool:
        _, count = self._execute("end_lease", _end_lease_params(lease, now, state, error))
        return count == 1

    def dead_letter(self, lease: Lease, now: datetime, error: str) -> bool:
        return self._end_lease(lease, now, JobState.DEAD_LETTERED, error)

    def quarantine(self, lease: Lease, now: datetime, error: str) -> bool:
        return self._end_lease(lease, now, JobState.QUARANTINED, error)

    def cancel_leased(self, lease: Lease, now: datetime, error: str) -> bool:
        return self._end_lease(lease, now, JobState.CANCELLED, error)

    def release(self, leases: Sequence[Lease], now: datetime) -> int:
        if not leases:
            return 0
        _, count = self._execute("release", {
            "now": _utc(now, "now"), "cancelled_error": CANCELLED_ON_REQUEST,
            **_lease_columns(leases),
        })
        return count

    def heartbeat(
        self, leases: Sequence[Lease], now: datetime, lease_expires_at: datetime
    ) -> Renewal:
        if not leases:
            return Renewal()
        rows, _ = self._execute("heartbeat", {
            "now": _utc(now, "now"),
            "lease_expires_at": _utc(lease_expires_at, "lease_expires_at"),
            **_lease_columns(leases),
        })
        return Renewal((row[0] for row in rows), (row[0] for row in rows if row[1]))

    def find_expired_leases(self, now: datetime, limit: int) -> list[JobRecord]:
        if limit <= 0:
            return []
        rows, _ = self._execute("find_expired_leases", {"now": _utc(now, "now"),
                                                        "limit": limit})
        return [_record(row) for row in rows]

    def expire_lease(
        self, lease: Lease, now: datetime, due_at: datetime | None, error: str
    ) -> bool:
        _, count = self._execute("expire_lease", {
            "id": lease.job_id, "owner": lease.owner, "attempt": lease.attempt,
            "now": _utc(now, "now"), "due_at": due_at, "error": error,
            "cancelled_error": CANCELLED_ON_REQUEST,
        })
        return count == 1

    def cancel(self, job_id: int, now: datetime) -> bool:
        _, count = self._execute("cancel", {"id": job_id, "now": now})
        return count == 1

    def requeue(self, job_id: int, now: datetime) -> bool:
        try:
            _, count = self._execute("requeue", {
                "id": job_id, "now": _utc(now, "now"), "channel": self.channel})
        except StoreError as error:
            # Unique jobs: a job of the same name and key was enqueued (committed) while
            # this statement ran; its NOT EXISTS saw the snapshot before. Refused, as if
            # that job had been there first.
            if isinstance(error.__cause__, psycopg.errors.UniqueViolation):
                return False
            raise
        return count == 1

    def requeue_many(self, *, state: JobState, queue: str | None, now: datetime) -> int:
        rows, _ = self._execute("requeue_many", {
            "state": check_requeueable(state).value, "queue": queue, "now": _utc(now, "now"),
            "channel": self.channel,
        })
        return int(rows[0][0])

    def purge(
        self, states: Sequence[JobState], finished_before: datetime, limit: int
    ) -> int:
        chosen = purgeable_states(states)
        if limit <= 0:
            return 0
        _, count = self._execute("purge", {
            "states": [state.value for state in chosen],
            "finished_before": _utc(finished_before, "finished_before"),
            "limit": limit,
        })
        return count

    # -- Queue controls -------------------------------------------------------------------

    def _change_settings(self, name: str, params: Mapping[str, object]) -> QueueSettings:
        rows, _ = self._execute(name, {**params, "channel": self.channel})
        queue, paused, limit = rows[0]
        return QueueSettings(queue, paused=paused, limit=limit)

    def pause_queue(self, queue: str) -> QueueSettings:
        return self._change_settings(
            "set_queue_paused", {"queue": validate_queue_name(queue), "paused": True})

    def resume_queue(self, queue: str) -> QueueSettings:
        return self._change_settings(
            "set_queue_paused", {"queue": validate_queue_name(queue), "paused": False})

    def set_queue_limit(self, queue: str, limit: int | None) -> QueueSettings:
        return self._change_settings("set_queue_limit", {
            "queue": validate_queue_name(queue), "limit": validate_queue_limit(limit)})

    def queue_infos(self, now: datetime) -> list[QueueInfo]:
        rows, _ = self._execute("queue_infos", {"now": _utc(now, "now")})
        settings: list[QueueSettings] = []
        counts: dict[tuple[str, JobState], int] = {}
        due: dict[str, tuple[int, datetime | None]] = {}
        for queue, state, count, due_count, oldest, paused, limit in rows:
            if state is None:
                settings.append(QueueSettings(queue, paused=paused, limit=limit))
                continue
            counts[(queue, _STATES[state])] = count
            if due_count:
                due[queue] = (due_count, oldest)
        return build_queue_infos(settings, counts, due)

    # -- reads ----------------------------------------------------------------------------

    def get_job(self, job_id: int) -> JobRecord | None:
        rows, _ = self._execute("get_job", {"id": job_id})
        return _record(rows[0]) if rows else None

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
        if limit <= 0:
            return []
        rows, _ = self._execute(listing_statement(newest, state), {
            "queue": queue, "state": state.value if state is not None else None,
            "limit": limit, "offset": offset, "name": name,
        })
        return [_record(row) for row in rows]

    def count_jobs(self) -> dict[tuple[str, JobState], int]:
        rows, _ = self._execute("count_jobs", {})
        return {(queue, JobState(state)): count for queue, state, count in rows}

    # -- the dashboard's "when will it run?" (branch dashboard) --------------------------

    def due_position(self, job_id: int, now: datetime) -> int | None:
        rows, _ = self._execute("due_position", {"id": job_id, "now": _utc(now, "now")})
        return int(rows[0][0]) if rows else None

    # -- wake-up hints --------------------------------------------------------------------

    def listen(self, on_enqueue: Callable[[str], None]) -> Callable[[], None]:
        """Call `on_enqueue(queue)` for each enqueue hint, from a background thread.

        LISTEN is in effect when this returns: every enqueue committed afterwards (by any
        process) is reported, once per Queue per transaction. If the listening connection
        drops, the thread reconnects with backoff; hints sent meanwhile are lost, which
        only delays work until the next poll.

        Returns:
            A function that stops the thread and closes its connection (idempotent).

        Raises:
            StoreError: if PostgreSQL cannot be reached to start listening.
        """
        if self._closed:
            raise StoreError(f"PostgreSQL store {self._url!r} is closed; open a new one")
        self._ensure_ready()
        listener = _Listener(self, on_enqueue)
        with self._listeners_lock:
            self._listeners.add(listener)

        def stop() -> None:
            listener.stop()
            with self._listeners_lock:
                self._listeners.discard(listener)

        return stop

    def close(self) -> None:
        """Stop every listener and close every connection. Idempotent."""
        self._closed = True
        with self._listeners_lock:
            listeners, self._listeners = list(self._listeners), set()
        for listener in listeners:
            listener.stop()
        self._pool.close()

    # -- transactional enqueue (branch integrate) -------------------------------------------

    def enqueue_on(
        self, connection: object, jobs: Sequence[NewJob], now: datetime
    ) -> list[int]:
        """Store `jobs` on the caller's `psycopg.Connection` (psycopg 3), inside its current
        transaction: they exist if and only if the caller commits. The wake-up NOTIFY is
        part of that transaction, so PostgreSQL delivers it to the workers at commit, and
        not at all on rollback. An autocommit connection has no transaction to join: the
        jobs commit at once, like any statement run on it.

        The connection must reach the store's database; the store's schema is migrated
        first if needed (on the store's own connection).

        Raises:
            TypeError: `connection` is not a `psycopg.Connection` (for an
                `AsyncConnection`, see `enqueue_on_async`).
            psycopg.Error: from the caller's connection, unchanged (the caller's
                transaction is then aborted, as after any failed statement: roll it back).
        """
        if not isinstance(connection, psycopg.Connection):
            raise TypeError(
                f"PostgreSQL store {self._url!r} enqueues on a psycopg.Connection (psycopg "
                f"3, sync); got {type(connection).__module__}.{type(connection).__qualname__}"
            )
        if not jobs:
            return []
        params = self._enqueue_params(jobs, now)
        if self._closed:
            raise StoreError(f"PostgreSQL store {self._url!r} is closed; open a new one")
        self._ensure_ready()  # migrated: the statement needs the schema
        with connection.cursor(row_factory=tuple_row) as cursor:
            if all(job.key is None for job in jobs):
                cursor.execute(self._query(_enqueue_statement(params)), params)
                return [row[0] for row in cursor.fetchall()]
            if connection.autocommit:  # no transaction of the caller's: make one
                with connection.transaction():
                    return self._enqueue_keyed(cursor, jobs, params)
            return self._enqueue_keyed(cursor, jobs, params)

    async def enqueue_on_async(
        self, connection: object, jobs: Sequence[NewJob], now: datetime
    ) -> list[int]:
        """`enqueue_on` for async code: on a `psycopg.AsyncConnection` the statements are
        awaited on the caller's event loop; a sync `psycopg.Connection` is written on
        inline, as `enqueue_on` does. The same rules otherwise.

        Raises:
            TypeError: `connection` is neither.
            psycopg.Error: from the caller's connection, unchanged.
        """
        if not isinstance(connection, psycopg.AsyncConnection):
            return self.enqueue_on(connection, jobs, now)
        if not jobs:
            return []
        params = self._enqueue_params(jobs, now)
        if self._closed:
            raise StoreError(f"PostgreSQL store {self._url!r} is closed; open a new one")
        if not self._ready:
            await asyncio.to_thread(self._ensure_ready)  # migrating blocks: off the loop
        async with connection.cursor(row_factory=tuple_row) as cursor:
            if all(job.key is None for job in jobs):
                await cursor.execute(self._query(_enqueue_statement(params)), params)
                return [row[0] for row in await cursor.fetchall()]
            if connection.autocommit:  # no transaction of the caller's: make one
                async with connection.transaction():
                    return await self._enqueue_keyed_async(cursor, jobs, params)
            return await self._enqueue_keyed_async(cursor, jobs, params)

    async def _enqueue_keyed_async(
        self, cursor: psycopg.AsyncCursor[TupleRow], jobs: Sequence[NewJob],
        params: dict[str, object],
    ) -> list[int]:
        steps = self._keyed_steps(jobs, params)
        query, query_params = next(steps)
        while True:
            await cursor.execute(query, query_params)
            try:
                query, query_params = steps.send(await cursor.fetchall())
            except StopIteration as done:
                ids: list[int] = done.value
                return ids

    # -- Schedules (branch schedules) -----------------------------------------------------

    def register_schedules(self, schedules: Sequence[ScheduleRegistration],
                           now: datetime) -> None:
        if not schedules:
            return
        self._execute("register_schedules", {
            "now": _utc(now, "now"),
            "names": [s.name for s in schedules],
            "definitions": [s.definition for s in schedules],
            "rules": [s.rule for s in schedules],
            "timezones": [s.timezone for s in schedules],
            "job_names": [s.job_name for s in schedules],
            "queues": [s.queue for s in schedules],
        })

    def fire_schedule(self, name: str, definition: str, job: NewJob,
                      now: datetime) -> FireOutcome:
        check_new_jobs([job])  # the same jobs refused on every store
        rows, _ = self._execute("fire_schedule", {
            "name": name, "definition": definition,
            "fire_at": _utc(job.due_at, "due_at"), "job_name": job.name,
            "queue": job.queue, "args": job.args_json, "kwargs": job.kwargs_json,
            "now": _utc(now, "now"), "channel": self.channel,
        })
        job_id, stored, _hints = rows[0]
        return FireOutcome(job_id, current=job_id is not None or stored == definition)

    def list_schedules(self) -> list[ScheduleRow]:
        rows, _ = self._execute("list_schedules", {})
        return [ScheduleRow(*row) for row in rows]

    # -- worker registry (branch registry) -------------------------------------------------

    def register_worker(self, worker: WorkerInfo, now: datetime) -> None:
        columns = [policy_columns(group) for group in worker.groups]
        self._execute("register_worker", {
            "id": worker.id, "host": worker.host, "pid": worker.pid, "version": worker.version,
            "started_at": _utc(worker.started_at, "started_at"), "now": _utc(now, "now"),
            "dead_at": _utc(worker.dead_at, "dead_at"), "groups": groups_json(worker.groups),
            "in_flight": in_flight_json({g.name: g.in_flight for g in worker.groups}),
            "served": served_json(worker.served),
            "names": [group.name for group in worker.groups],
            "kinds": [kind for kind, _, _ in columns],
            "queue_lists": [queues for _, queues, _ in columns],
            "weight_lists": [weights for _, _, weights in columns],
            "pool_sizes": [group.pool_size for group in worker.groups],
        })

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
        # One INSERT may not touch a row twice: sum duplicates first.
        summed: dict[tuple[str, str, str], int] = {}
        for count in new:
            key = (count.group, count.queue, count.outcome)
            summed[key] = summed.get(key, 0) + count.count
        rows, _ = self._execute("refresh_worker", {
            "id": worker_id, "now": _utc(now, "now"), "dead_at": _utc(dead_at, "dead_at"),
            "in_flight": in_flight_json(in_flight), "served": served_json(served),
            "minute": minute_of(_utc(now, "now")),
            "grps": [key[0] for key in summed], "queues": [key[1] for key in summed],
            "outcomes": [key[2] for key in summed], "counts": list(summed.values()),
        })
        return bool(rows)

    def unregister_worker(self, worker_id: str) -> bool:
        _, count = self._execute("unregister_worker", {"id": worker_id})
        return count == 1

    def remove_dead_workers(self, dead_before: datetime) -> int:
        _, count = self._execute(
            "remove_dead_workers", {"dead_before": _utc(dead_before, "dead_before")})
        return count

    def prune_served(self, before: datetime) -> int:
        _, count = self._execute("prune_served", {"before": _utc(before, "before")})
        return count

    def list_workers(self, now: datetime) -> list[WorkerInfo]:
        rows, _ = self._execute("list_workers", {})
        moment = _utc(now, "now")
        return [
            WorkerInfo(
                id=worker_id, host=host, pid=pid, version=version, started_at=started_at,
                last_seen=last_seen, dead_at=dead_at,
                groups=groups_from_json(groups, in_flight), served=served_from_json(served),
                alive=moment < dead_at,
            )
            for (worker_id, host, pid, version, started_at, last_seen, dead_at, groups,
                 in_flight, served) in rows
        ]

    def served_counts(self, since: datetime) -> list[ServedCount]:
        rows, _ = self._execute(
            "served_counts", {"since": minute_of(_utc(since, "since"))})
        return [
            ServedCount(group=group, queue=queue, outcome=outcome, count=count, minute=minute)
            for minute, group, queue, outcome, count in rows
        ]

    def worker_groups(self) -> list[WorkerGroupInfo]:
        rows, _ = self._execute("worker_groups", {})
        return [
            group_from_columns(name, kind, queues, weights, pool_size, seen_at)
            for name, kind, queues, weights, pool_size, seen_at in rows
        ]


class _Listener:
    """One LISTEN connection and the thread that reads it.

    The thread waits in select() on the connection's socket and on a wake-up socket, so
    `stop()` ends it at once, without polling or timeouts.
    """

    RECONNECT_DELAYS_S: Final = (0.1, 0.5, 1.0, 2.0, 5.0)

    def __init__(self, store: PostgresStore, on_enqueue: Callable[[str], None]) -> None:
        self._store = store
        self._on_enqueue = on_enqueue
        self._stopping = threading.Event()
        self._wake_reader, self._wake_writer = socket.socketpair()
        try:
            self._conn: psycopg.Connection[TupleRow] | None = self._open()
        except BaseException:
            self._wake_reader.close()
            self._wake_writer.close()
            raise
        self._thread = threading.Thread(
            target=self._run, name=f"rota-listen-{store.schema}", daemon=True
        )
        self._thread.start()

    def _open(self) -> psycopg.Connection[TupleRow]:
        conn = self._store._connect()
        try:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._store.channel)))
        except psycopg.Error as error:
            conn.close()
            self._store._fail("listen", error)
        return conn

    def stop(self) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        with suppress(OSError):  # the thread may be gone already
            self._wake_writer.send(b"\0")
        if threading.current_thread() is not self._thread:
            self._thread.join()
        self._wake_writer.close()
        self._wake_reader.close()

    def _run(self) -> None:
        failures = 0
        try:
            while not self._stopping.is_set():
                if self._conn is None:
                    delay = self.RECONNECT_DELAYS_S[
                        min(failures, len(self.RECONNECT_DELAYS_S) - 1)
                    ]
                    if self._stopping.wait(delay):
                        break
                    try:
                        self._conn = self._open()
                        failures = 0
                    except StoreError as error:
                        failures += 1
                        log.warning("cannot reconnect the LISTEN connection (retrying in "
                                    "the background; polling goes on): %s", error)
                        continue
                try:
                    self._read(self._conn)
                except Exception as error:
                    if self._stopping.is_set():
                        break
                    if isinstance(error, psycopg.Error | OSError | ValueError):
                        log.warning("the LISTEN connection dropped (%s); reconnecting",
                                    str(error).strip().splitlines()[0] if str(error) else
                                    type(error).__name__)
                    else:  # a bug: say so loudly, then carry on as after a drop
                        log.exception("the LISTEN thread failed unexpectedly; reconnecting")
                    self._conn.close()
                    self._conn = None
                    failures += 1
        finally:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _read(self, conn: psycopg.Connection[TupleRow]) -> None:
        """Wait for hints and deliver them, until stopped or the connection fails."""
        pgconn = conn.pgconn
        channel = self._store.channel.encode()
        wake = self._wake_reader.fileno()
        while not self._stopping.is_set():
            readable, _, _ = select.select([pgconn.socket, wake], [], [])
            if wake in readable:
                return
            pgconn.consume_input()
            if pgconn.status != psycopg.pq.ConnStatus.OK:
                raise psycopg.OperationalError("the LISTEN connection was closed")
            while (notify := pgconn.notifies()) is not None:
                if notify.relname != channel:
                    continue
                try:
                    self._on_enqueue(notify.extra.decode())
                except Exception:
                    log.exception("an on_enqueue callback failed; hint dropped")
