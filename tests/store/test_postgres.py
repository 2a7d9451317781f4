"""PostgreSQL store behaviours beyond the shared contract: migrations, schemas, indexes,
round trips, LISTEN/NOTIFY, errors and recovery, concurrent claimers.

Each test gets a fresh database (tests/pg.py).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from multiprocessing import get_context
from typing import Any

import pytest

pytest.importorskip("psycopg")

import psycopg
from psycopg import sql

from rota.core.jobs import JobState, NewJob
from rota.store import open_store
from rota.store.base import SchemaTooNew, StoreConfigError, StoreError
from rota.store.postgres import SCHEMA_VERSION, PostgresStore, migrations, render_sql
from rota.store.postgres.floors import START
from rota.store.postgres.schema import render

pytestmark = pytest.mark.postgres

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)
HINT_WAIT_S = 10.0  # upper bound for an event to arrive; tests end as soon as it does


@pytest.fixture
def admin(pg_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A plain autocommit connection to the fresh database, for looking behind the store."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        yield conn


def new(queue: str = "q", due_at: datetime = T0, args: str = "[]") -> NewJob:
    return NewJob(name="job", queue=queue, due_at=due_at, args_json=args)


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement psycopg sends against rota's tables from now on."""
    sent: list[str] = []
    original = psycopg.Cursor.execute

    def spy(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        text = str(query)
        if '"rota".' in text:
            sent.append(text)
        return original(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", spy)
    return sent


# -- migrations ----------------------------------------------------------------------------


def test_many_threads_migrating_a_fresh_database_at_once_migrate_it_exactly_once(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[tuple[object, ...]]
) -> None:
    # Given eight nodes starting together on an empty database
    stores = [make_store() for _ in range(8)]
    barrier = threading.Barrier(len(stores))

    def start(store: PostgresStore) -> list[int]:
        barrier.wait()
        return store.migrate()

    # When they all migrate at once
    with ThreadPoolExecutor(len(stores)) as pool:
        applied = list(pool.map(start, stores))
    # Then exactly one applied every migration, the others found nothing to do
    assert sorted(applied, key=len) == [[]] * 7 + [list(range(1, SCHEMA_VERSION + 1))]
    ledger = admin.execute("SELECT version FROM rota.schema_migrations ORDER BY 1").fetchall()
    assert [row[0] for row in ledger] == list(range(1, SCHEMA_VERSION + 1))
    assert all(store.schema_version() == SCHEMA_VERSION for store in stores)


def _migrate_in_a_process(url: str) -> list[int]:
    store = PostgresStore.from_url(url)
    try:
        return store.migrate()
    finally:
        store.close()


def test_many_processes_migrating_at_once_migrate_exactly_once(pg_url: str) -> None:
    # Given four processes starting together on an empty database
    with ProcessPoolExecutor(4, mp_context=get_context("spawn")) as pool:
        # When each migrates
        applied = list(pool.map(_migrate_in_a_process, [pg_url] * 4))
    # Then exactly one of them applied the migrations
    assert sorted(applied, key=len) == [[]] * 3 + [list(range(1, SCHEMA_VERSION + 1))]


def test_migrations_apply_automatically_on_first_use(
    make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store()
    assert store.schema_version() == 0
    assert store.count_jobs() == {}
    assert store.schema_version() == SCHEMA_VERSION
    assert store.migrate() == []


def test_a_store_opened_read_only_is_never_created_or_migrated(pg_url: str) -> None:
    # Given an empty database, opened read-only (as every read command opens it)
    from rota.store import open_store

    reader = open_store(pg_url, read_only=True)
    try:
        # When it is read, then the error names the fix, and no schema was created
        with pytest.raises(StoreError, match=r"schema version 0, this rota needs .*rota "
                                             r"migrate"):
            reader.count_jobs()
        assert reader.store_time() is not None  # the server's clock needs no schema
        assert reader.schema_version() == 0  # type: ignore[attr-defined]
    finally:
        reader.close()
    # And once migrated, the read-only store reads
    writer = open_store(pg_url)
    writer.enqueue([NewJob("job", "q", T0, "[]", "{}")], T0)
    writer.close()
    reader = open_store(pg_url, read_only=True)
    try:
        assert reader.count_jobs() == {("q", JobState.SCHEDULED): 1}
    finally:
        reader.close()


def test_a_schema_migrated_by_a_newer_rota_is_refused(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[tuple[object, ...]]
) -> None:
    # Given a database a future rota migrated to version 999
    make_store().migrate()
    admin.execute("INSERT INTO rota.schema_migrations VALUES (999, 'from the future')")
    # When this rota uses it
    store = make_store()
    with pytest.raises(SchemaTooNew) as refused:
        store.count_jobs()
    # Then it refuses, saying which versions and what to do
    message = str(refused.value)
    assert "version 999" in message and f"up to {SCHEMA_VERSION}" in message
    assert "Upgrade rota" in message
    with pytest.raises(SchemaTooNew):
        store.migrate()


def test_a_custom_schema_keeps_its_jobs_apart(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[tuple[object, ...]]
) -> None:
    # Given two stores on one database, one in schema tenant_a
    default, tenant = make_store(), make_store("?schema=tenant_a")
    # When each enqueues
    default.enqueue([new()], T0)
    tenant.enqueue([new(), new()], T0)
    # Then each sees only its own jobs, in its own schema
    assert default.count_jobs() == {("q", JobState.SCHEDULED): 1}
    assert tenant.count_jobs() == {("q", JobState.SCHEDULED): 2}
    assert tenant.schema == "tenant_a" and tenant.channel == "tenant_a_enqueue"
    tables = admin.execute(
        "SELECT table_schema FROM information_schema.tables WHERE table_name = 'jobs' "
        "ORDER BY 1"
    ).fetchall()
    assert [row[0] for row in tables] == ["rota", "tenant_a"]


def test_the_schema_can_be_given_to_the_constructor(pg_url: str) -> None:
    store = PostgresStore(pg_url, schema="by_argument")
    try:
        store.enqueue([new()], T0)
        assert store.schema_version() == SCHEMA_VERSION
    finally:
        store.close()


# -- claims and round trips ----------------------------------------------------------------


def test_claims_use_the_partial_index_with_many_finished_rows(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[tuple[object, ...]]
) -> None:
    # Given 200,000 finished jobs and a few scheduled ones
    store = make_store()
    store.migrate()
    admin.execute(
        "INSERT INTO rota.jobs (name, queue, state, due_at, args, kwargs, created_at, "
        "finished_at) SELECT 'old', 'q', 'succeeded', %(t)s, '[]', '{}', %(t)s, %(t)s "
        "FROM generate_series(1, 200000)", {"t": T0 - timedelta(days=1)},
    )
    due = store.enqueue([new(), new(), new("other")], T0)
    admin.execute("ANALYZE rota.jobs")
    # When the claim statement is planned
    plan = "\n".join(str(row[0]) for row in admin.execute(
        "EXPLAIN " + render_sql("claim", "rota"),
        {**CLAIM_TWO, "queues": ["q", "other"]},
    ))
    # Then it walks the partial index, never the table
    assert "Index Scan using jobs_claimable" in plan, plan
    assert "Seq Scan on jobs" not in plan, plan
    # And the claim takes exactly the due jobs, first Queue first
    claimed = store.claim(["q", "other"], 10, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    assert [job.id for job in claimed] == due


def test_the_jobs_in_flight_are_read_from_the_lease_index_not_the_table(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[tuple[object, ...]]
) -> None:
    # Given 100,000 finished jobs and a few leased ones
    store = make_store()
    store.migrate()
    admin.execute(
        "INSERT INTO rota.jobs (name, queue, state, due_at, args, kwargs, created_at, "
        "finished_at) SELECT 'old', 'q', 'succeeded', %(t)s, '[]', '{}', %(t)s, %(t)s "
        "FROM generate_series(1, 100000)", {"t": T0 - timedelta(days=1)},
    )
    store.enqueue([new(), new(), new()], T0)
    leased = store.claim(["q"], 2, now=T0, owner="g@h:1:x", lease_expires_at=T0 + LEASE)
    admin.execute("ANALYZE rota.jobs")
    # When the dashboard's read of what runs now is planned
    plan = "\n".join(str(row[0]) for row in admin.execute(
        "EXPLAIN " + render_sql("jobs_in_flight", "rota"),
        {"owners": "{g@h:1:x,g@h:2:y}", "limit": 500},
    ))
    # Then it walks the lease index (the leased rows only), never the table
    assert "jobs_lease_expiry" in plan, plan
    assert "Seq Scan on jobs" not in plan, plan
    assert [job.id for job in store.jobs_in_flight(["g@h:1:x"])] == [j.id for j in leased]


def _positional(name: str) -> tuple[str, list[str]]:
    """The named statement with $1, $2... for its %(name)s parameters, as psycopg sends
    it, and the parameters' names in that order."""
    order: list[str] = []

    def positional(match: re.Match[str]) -> str:
        if match[1] not in order:
            order.append(match[1])
        return f"${order.index(match[1]) + 1}"

    return re.sub(r"%\((\w+)\)[sb]", positional, render_sql(name, "rota")), order


def _generic_plan(conn: psycopg.Connection[Any], name: str, values: dict[str, object]) -> str:
    """The plan PostgreSQL uses for the named statement once it switches to a generic plan
    (as it may after five executions of a prepared statement)."""
    text, order = _positional(name)
    conn.execute("PREPARE hot_statement AS " + text)
    conn.execute("SET plan_cache_mode = force_generic_plan")
    arguments = sql.SQL(", ").join(sql.Literal(values[key]) for key in order)
    explain = sql.SQL("EXPLAIN EXECUTE hot_statement({})").format(arguments)
    try:
        return "\n".join(str(row[0]) for row in conn.execute(explain))
    finally:
        conn.execute("DEALLOCATE hot_statement")
        conn.execute("RESET plan_cache_mode")


LEASES = {"ids": [1, 2], "owners": ["w", "w"], "attempts": [1, 1]}


def floors(count: int, prefix: str = "") -> dict[str, object]:
    """The claim floors of `count` Queues, none set (each scan from the start)."""
    return {f"{prefix}floor_dues": [START] * count, f"{prefix}floor_ids": [0] * count}


CLAIM_VALUES: dict[str, object] = {"queues": ["q"], **floors(1), "limits": [10], "limit": 10,
                                   "now": T0, "owner": "w", "worker": "w",
                                   "lease_expires_at": T0 + LEASE}
CLAIM_TWO: dict[str, object] = {**CLAIM_VALUES, **floors(2), "queues": ["q", "r"],
                                "limits": [10, 10]}


@pytest.mark.parametrize(
    ("name", "values", "index"),
    [
        ("claim", CLAIM_TWO, "jobs_claimable"),
        # ...and finds the rows it locked by primary key (not by hashing a table scan)
        ("claim", CLAIM_TWO, "jobs_pkey"),
        # ...and reads the settings of the Queues asked by primary key (a bitmap scan is
        # fine there: settings rows change at an operator's pace, not a drain's)
        ("claim", CLAIM_TWO, "queue_settings_pkey"),
        # A claim over a limited Queue: due jobs, leases counted on the lease index, rows
        ("claim_limited", CLAIM_TWO,
         "jobs_claimable"),
        ("claim_limited", CLAIM_TWO,
         "jobs_lease_expiry"),
        ("claim_limited", CLAIM_TWO,
         "jobs_pkey"),
        ("complete", {**LEASES, "now": T0}, "jobs_pkey"),
        # A claim carrying successes: claims by jobs_claimable, completes by primary key
        ("claim_completing", {**LEASES, **CLAIM_VALUES},
         "jobs_claimable"),
        ("claim_completing", {**LEASES, **CLAIM_VALUES},
         "jobs_pkey"),
        ("claim_completing_results", {**LEASES, **CLAIM_VALUES, "results": ["1", None]},
         "jobs_pkey"),
        ("complete_results", {**LEASES, "now": T0, "results": ["1", None]}, "jobs_pkey"),
        ("release", {**LEASES, "now": T0, "cancelled_error": "c", "channel": "c"}, "jobs_pkey"),
        ("heartbeat", {**LEASES, "now": T0, "lease_expires_at": T0 + LEASE}, "jobs_pkey"),
        ("retry", {"id": 1, "owner": "w", "attempt": 1, "due_at": T0, "error": "e",
                   "now": T0, "cancelled_error": "c", "traceback": "t", "channel": "c",
                   "attempt_error": '{"attempt": 1}'},
         "jobs_pkey"),
        ("snooze", {"id": 1, "owner": "w", "attempt": 1, "due_at": T0, "now": T0,
                    "cancelled_error": "c", "channel": "c"}, "jobs_pkey"),
        # Retention: the purge finds its batch through the finished-rows index...
        ("purge_lock", {"states": ["succeeded", "cancelled"], "finished_before": T0,
                        "limit": 1000}, "jobs_finished"),
        # ...and deletes what it locked by primary key, with the edges of those jobs
        ("purge", {"ids": "{1,2}", "states": ["succeeded", "cancelled"],
                   "finished_before": T0}, "jobs_pkey"),
        ("purge", {"ids": "{1,2}", "states": ["succeeded", "cancelled"],
                   "finished_before": T0}, "job_edges_pkey"),
    ],
)
def test_hot_statements_keep_their_index_paths_in_generic_plans(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[Any],
    name: str, values: dict[str, object], index: str,
) -> None:
    # Given many finished jobs and a few live ones
    store = make_store()
    store.migrate()
    admin.execute(
        "INSERT INTO rota.jobs (name, queue, state, due_at, args, kwargs, created_at, "
        "finished_at) "
        "SELECT 'old', 'q', 'succeeded', %(t)s, '[]', '{}', %(t)s, %(t)s "
        "FROM generate_series(1, 200000)", {"t": T0 - timedelta(days=1)},
    )
    store.enqueue([new(), new()], T0)
    store.claim(["q"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    admin.execute("ANALYZE rota.jobs")
    # When the statement is planned without knowing its parameters (claim_limited and
    # purge_lock in their transactions, after index_scans_only.sql)
    with admin.transaction():
        if name in ("claim_limited", "purge_lock"):
            admin.execute(render_sql("index_scans_only", "rota"))
        plan = _generic_plan(admin, name, values)
    # Then it still goes by its index: never a table scan, never a bitmap scan of jobs
    # (which would not mark dead index entries and slow down as jobs churn)
    assert f"Index Scan using {index}" in plan or f"Index Scan on {index}" in plan, plan
    assert "Seq Scan" not in plan and "Bitmap Heap Scan on jobs" not in plan, plan


def test_the_purge_finds_its_batch_by_index_on_a_table_of_a_days_jobs(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[Any],
) -> None:
    # Given a jobs table as retention meets it: 100,000 jobs that finished over the last
    # hour, none old enough to go, the table analysed (autovacuum's statistics)
    store = make_store()
    store.migrate()
    admin.execute(
        "INSERT INTO rota.jobs (name, queue, state, due_at, args, kwargs, created_at, "
        "finished_at) "
        "SELECT 'job', 'q', 'succeeded', at, '[]', '{}', at, at FROM (SELECT %(t)s - "
        "interval '1 hour' + i * interval '36 ms' AS at FROM generate_series(1, 100000) "
        "AS i) AS finished", {"t": T0})
    admin.execute("VACUUM ANALYZE rota.jobs")
    # When the purge's first statement is planned as the store plans it (a generic plan,
    # in its transaction)
    with admin.transaction():
        admin.execute(render_sql("index_scans_only", "rota"))
        plan = _generic_plan(admin, "purge_lock", {
            "states": ["succeeded", "dead_lettered", "cancelled"],
            "finished_before": T0 - timedelta(days=1), "limit": 1000})
    # Then it walks the finished rows' index from the oldest, and stops at the first row
    # too young: it does not read the table to find that none is old enough (the plan
    # without index_scans_only.sql: 12 ms here, a second a minute on a day of 70 jobs/s)
    assert "Index Scan using jobs_finished" in plan, plan
    assert "Seq Scan" not in plan, plan




def test_a_limited_claim_counts_leases_by_index_on_a_table_never_analysed(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[Any],
) -> None:
    # Given 200,000 due jobs in a Queue with a limit, a few of them leased, and no ANALYZE
    # yet (a bulk load before autovacuum's first round, or autovacuum off)
    store = make_store()
    store.migrate()
    store.set_queue_limit("q", 50)
    admin.execute(
        "INSERT INTO rota.jobs (name, queue, state, due_at, args, kwargs, created_at) "
        "SELECT 'job', 'q', 'scheduled', %(t)s, '[]', '{}', %(t)s "
        "FROM generate_series(1, 200000)", {"t": T0})
    store.claim(["q"], 5, now=T0, owner="w", lease_expires_at=T0 + LEASE, limits=[5])
    # When the limited claim is planned in its transaction, after index_scans_only.sql
    with admin.transaction():
        admin.execute(render_sql("index_scans_only", "rota"))
        plan = "\n".join(str(row[0]) for row in admin.execute(
            "EXPLAIN " + render_sql("claim_limited", "rota"), CLAIM_VALUES))
    # Then the leases are counted on the lease index, not by a scan of the whole table
    # (which took 18 ms a claim on this table, against 1.2 ms by the index)
    assert "Index Scan using jobs_lease_expiry" in plan, plan
    assert "Seq Scan on jobs" not in plan, plan


def _cached_plan(store: PostgresStore) -> str:
    """The plan cached for `store`'s prepared claim statement, on its one pooled connection
    (psycopg prepares a statement at its fifth run; the store forces generic plans)."""
    _, order = _positional("claim")
    with store._pool.connection() as conn:
        row = conn.execute("SELECT name FROM pg_prepared_statements "
                           "WHERE statement LIKE '%%leased AS (%%'").fetchone()
        assert row is not None, "the claim was not prepared"
        arguments = sql.SQL(", ").join(sql.Literal(CLAIM_VALUES[key]) for key in order)
        explain = sql.SQL("EXPLAIN EXECUTE {}({})").format(sql.Identifier(row[0]), arguments)
        return "\n".join(str(plan[0]) for plan in conn.execute(explain))


def test_statements_planned_on_a_small_table_are_planned_again_once_it_grew(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[Any],
) -> None:
    # Given a store with one connection whose claim was prepared and planned while the
    # jobs table held 10 jobs (a worker started beside a trickle)
    store = make_store("?pool_max_size=1")
    store.migrate()
    store.enqueue([new() for _ in range(10)], T0)
    for _ in range(6):
        claimed = store.claim(["q"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)
        store.complete([job.lease for job in claimed], T0)
    # When the table grows to 100,000 due jobs, with no ANALYZE (autovacuum off, or
    # before its first round)
    admin.execute(
        "INSERT INTO rota.jobs (name, queue, state, due_at, args, kwargs, created_at) "
        "SELECT 'job', 'q', 'scheduled', %(t)s, '[]', '{}', %(t)s "
        "FROM generate_series(1, 100000)", {"t": T0})
    # Then the plan made for the small table scans the whole table for each claimed row
    assert "Seq Scan on jobs" in _cached_plan(store)
    # And once its plans are older than replan_after_s, they are dropped as the connection
    # goes back to the pool, and the next claim is planned again, for the table as it is
    # now: by index only
    store.replan_after_s = 0.0
    store.count_jobs()
    claimed = store.claim(["q"], 10, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    assert len(claimed) == 10
    plan = _cached_plan(store)
    assert "Seq Scan on jobs" not in plan, plan
    assert "Index Scan using jobs_pkey" in plan, plan


def test_the_newest_jobs_of_a_finished_state_walk_the_finished_index(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[Any],
) -> None:
    # Given 200,000 succeeded jobs (finished 20 at a time, a millisecond apart), then
    # 200,000 newer scheduled ones
    store = make_store()
    store.migrate()
    finished_at = "%(t)s + (n / 20) * interval '1 millisecond'"
    for state, finished in (("succeeded", finished_at), ("scheduled", "NULL")):
        admin.execute(
            "INSERT INTO rota.jobs (name, queue, state, due_at, args, kwargs, created_at, "
            f"finished_at) SELECT 'old', 'q', '{state}', %(t)s, '[]', '{{}}', %(t)s, "
            f"{finished} FROM generate_series(1, 200000) AS n", {"t": T0 - timedelta(days=1)})
    admin.execute("ANALYZE rota.jobs")
    # When the listing of the newest succeeded jobs is planned with its values, as the
    # store sends it (bound client-side)
    params = {"state": "succeeded", "queue": None, "name": None, "limit": 50, "offset": 0}
    query = psycopg.ClientCursor(admin).mogrify(render_sql("list_jobs_finished", "rota"),
                                                params)
    plan = "\n".join(str(row[0]) for row in admin.execute("EXPLAIN " + query))
    # Then it walks jobs_finished backwards, never the table, never every succeeded row
    assert "Index Scan Backward using jobs_finished" in plan, plan
    assert "Seq Scan" not in plan and "Bitmap" not in plan, plan
    assert [job.state for job in store.list_jobs(state=JobState.SUCCEEDED, newest=True,
                                                  limit=3)] == [JobState.SUCCEEDED] * 3


def test_a_meta_search_asks_the_meta_index(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[Any],
) -> None:
    # Given 100,000 jobs of 1,000 tenants (meta {"tenant": "t<n % 1000>", "order": n})
    store = make_store()
    store.migrate()
    admin.execute(
        "INSERT INTO rota.jobs (name, queue, state, due_at, args, kwargs, created_at, meta) "
        "SELECT 'job', 'q', 'scheduled', %(t)s, '[]', '{}', %(t)s, "
        "jsonb_build_object('tenant', 't' || (n %% 1000), 'order', n) "
        "FROM generate_series(1, 100000) AS n", {"t": T0})
    # (Statistics from every row, not a random sample of 30,000: the same plan each run.)
    admin.execute("ALTER TABLE rota.jobs ALTER COLUMN meta SET STATISTICS 1000, "
                  "ALTER COLUMN id SET STATISTICS 1000")
    admin.execute("ANALYZE rota.jobs")
    # When the newest jobs of one tenant are planned as the store sends them (bound
    # client-side, find_jobs_newest, composed from find_jobs.sql)
    params = {"queue": None, "state": None, "name": None, "meta": '{"tenant":"t17"}',
              "needle": None, "limit": 100, "beyond": None}
    query = psycopg.ClientCursor(admin).mogrify(render_sql("find_jobs_newest", "rota"),
                                                params)
    plan = "\n".join(str(row[0]) for row in admin.execute("EXPLAIN " + query))
    # Then the GIN index jobs_meta answers it, not a walk of the table
    assert "Bitmap Index Scan on jobs_meta" in plan, plan
    assert "Seq Scan on jobs" not in plan, plan
    found = store.find_jobs(meta={"tenant": "t17"}, limit=3)
    assert [job.meta["order"] for job in found] == [99017, 98017, 97017]


def test_a_strict_claim_over_several_queues_is_one_statement(
    make_store: Callable[..., PostgresStore], statements: list[str]
) -> None:
    # Given due jobs on three Queues, the oldest on the last
    store = make_store()
    (c_old,) = store.enqueue([new("c", T0 - timedelta(hours=1))], T0)
    a = store.enqueue([new("a"), new("a")], T0)
    b = store.enqueue([new("b", T0 - timedelta(seconds=1)), new("b", T0 - timedelta(seconds=2))],
                      T0)
    statements.clear()
    # When a Strict claim asks for a, b, c
    claimed = store.claim(["a", "b", "c"], 5, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    # Then one statement leased them, Queue order first, then due time
    assert len(statements) == 1
    assert [job.id for job in claimed] == [*a, b[1], b[0], c_old]
    assert all(job.state is JobState.LEASED for job in claimed)


def test_a_claim_over_queues_without_a_limit_is_one_statement_and_locks_no_settings(
    make_store: Callable[..., PostgresStore], pg_url: str, statements: list[str]
) -> None:
    # Given settings rows for "q" (paused, then resumed) and "other" (limited), and an
    # operator's transaction holding the lock on both rows
    store = make_store()
    ids = store.enqueue([new("q"), new("q")], T0)
    store.pause_queue("q")
    store.resume_queue("q")
    store.set_queue_limit("other", 1)
    with psycopg.connect(pg_url) as holder:
        holder.execute("SELECT queue FROM rota.queue_settings FOR UPDATE")
        statements.clear()
        # When a claim asks only for "q", which has no limit
        result: list[list[int]] = []
        claimer = threading.Thread(target=lambda: result.append([
            job.id for job in store.claim(["q"], 5, now=T0, owner="w",
                                          lease_expires_at=T0 + LEASE)]))
        claimer.start()
        claimer.join(timeout=HINT_WAIT_S)
        blocked = claimer.is_alive()
        holder.rollback()
        claimer.join()
    # Then it did not wait for the lock, and it was one statement
    assert not blocked, "a claim over an unlimited Queue waited for a settings row lock"
    assert result == [ids]
    assert len(statements) == 1


def test_a_claim_over_a_limited_queue_waits_for_the_claimer_before_it(
    make_store: Callable[..., PostgresStore], pg_url: str,
) -> None:
    # Given a Queue limited to 2, and a claimer whose transaction leased 2 and holds the
    # settings row, not yet committed
    store = make_store()
    ids = store.enqueue([new("q") for _ in range(4)], T0)
    store.set_queue_limit("q", 2)
    params = {"queues": ["q"], **floors(1), "limits": [2], "limit": 2, "now": T0, "owner": "first",
              "worker": "first", "lease_expires_at": T0 + LEASE}
    with psycopg.connect(pg_url) as first:
        first.execute(render_sql("lock_queue_limits", "rota"), {"queues": ["q"], "members": []})
        taken = first.execute(render_sql("claim_limited", "rota"), params).fetchall()
        assert [row[0] for row in taken] == ids[:2]
        # When a second claimer asks for 2 more
        result: list[list[int]] = []
        second = threading.Thread(target=lambda: result.append([
            job.id for job in store.claim(["q"], 2, now=T0, owner="second",
                                          lease_expires_at=T0 + LEASE)]))
        second.start()
        # Then it waits on the lock (polled on the server, with a generous deadline)
        waiting = False
        with psycopg.connect(pg_url, autocommit=True) as watcher:
            for _ in range(int(HINT_WAIT_S / 0.01)):
                (count,) = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                    "current_database() AND wait_event_type = 'Lock'").fetchone() or (0,)
                if count:
                    waiting = True
                    break
                threading.Event().wait(0.01)
        first.commit()
        second.join()
    # And once the first commits, it counts the first's leases: no room is left
    assert waiting
    assert result == [[]]


def test_a_queue_named_twice_in_a_claim_is_served_once(
    make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store()
    a = store.enqueue([new("a"), new("a")], T0)
    b = store.enqueue([new("b")], T0)
    claimed = store.claim(["a", "b", "a"], 3, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    assert [job.id for job in claimed] == [*a, *b]


def test_enqueue_of_ten_thousand_jobs_is_one_round_trip(
    make_store: Callable[..., PostgresStore], statements: list[str]
) -> None:
    # Given a warm store and 10,000 jobs with distinct arguments
    store = make_store()
    store.count_jobs()
    statements.clear()
    jobs = [new("q", T0 + timedelta(microseconds=i), f"[{i}]") for i in range(10_000)]
    # When they are enqueued at once
    ids = store.enqueue(jobs, T0)
    # Then one statement stored them all, ids in input order
    assert len(statements) == 1
    assert len(ids) == 10_000 and ids == sorted(ids)
    assert store.count_jobs() == {("q", JobState.SCHEDULED): 10_000}
    for position in (0, 4_321, 9_999):
        job = store.get_job(ids[position])
        assert job is not None and job.args == (position,)
        assert job.due_at == T0 + timedelta(microseconds=position)


def test_enqueue_stores_all_or_nothing(make_store: Callable[..., PostgresStore]) -> None:
    # Given a batch whose last job PostgreSQL refuses (a NUL character in its name)
    store = make_store()
    jobs = [*(new() for _ in range(999)), NewJob("bad\x00name", "q", T0)]
    # When it is enqueued
    with pytest.raises((StoreError, ValueError)):
        store.enqueue(jobs, T0)
    # Then nothing was stored
    assert store.count_jobs() == {}


def test_timestamps_round_trip_exactly_as_utc(make_store: Callable[..., PostgresStore]) -> None:
    store = make_store()
    elsewhere = datetime(2026, 1, 1, 17, 0, 0, 123_457, tzinfo=timezone(timedelta(hours=5)))
    (job_id,) = store.enqueue([new(due_at=elsewhere)], T0)
    job = store.get_job(job_id)
    assert job is not None and job.due_at == elsewhere and job.due_at.tzinfo is UTC
    assert job.due_at.microsecond == 123_457


# -- concurrency ---------------------------------------------------------------------------


def test_eight_concurrent_claimers_get_64_distinct_jobs(
    make_store: Callable[..., PostgresStore],
) -> None:
    # Given 64 due jobs and eight claimers, each with its own store
    ids = make_store().enqueue([new() for _ in range(64)], T0)
    claimers = [make_store("?pool_max_size=2") for _ in range(8)]
    for claimer in claimers:
        claimer.migrate()
    barrier = threading.Barrier(len(claimers))

    def drain(claimer: PostgresStore) -> list[int]:
        barrier.wait()
        taken: list[int] = []
        while jobs := claimer.claim(["q"], 3, now=T0, owner=f"w{id(claimer)}",
                                    lease_expires_at=T0 + LEASE):
            taken.extend(job.id for job in jobs)
        return taken

    # When they all claim at once until nothing is left
    with ThreadPoolExecutor(len(claimers)) as pool:
        taken = [job_id for batch in pool.map(drain, claimers) for job_id in batch]
    # Then every job was leased exactly once
    assert sorted(taken) == ids
    assert len(set(taken)) == 64


def test_a_connection_dying_between_claim_and_commit_leaves_the_job_claimable(
    make_store: Callable[..., PostgresStore], pg_url: str,
    admin: psycopg.Connection[tuple[object, ...]],
) -> None:
    # Given a job, and a claimer whose transaction has claimed it but not committed
    store = make_store()
    (job_id,) = store.enqueue([new()], T0)
    dying = psycopg.connect(pg_url)
    try:
        claimed = dying.execute(render_sql("claim", "rota"), {
            "queues": ["q"], **floors(1), "limits": [1], "limit": 1, "now": T0, "owner": "dying",
            "worker": "dying", "lease_expires_at": T0 + LEASE}).fetchall()
        assert [row[0] for row in claimed] == [job_id]
        # Then another claimer skips the locked job instead of waiting for it
        assert store.claim(["q"], 1, now=T0, owner="w2", lease_expires_at=T0 + LEASE) == []
        # When the claimer's connection dies before commit
        pid = dying.info.backend_pid
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])
    finally:
        dying.close()
    # Then the job is claimable again, its attempt not counted
    (job,) = store.claim(["q"], 1, now=T0, owner="w2", lease_expires_at=T0 + LEASE)
    assert (job.id, job.attempt, job.lease_owner) == (job_id, 1, "w2")


# -- LISTEN/NOTIFY -------------------------------------------------------------------------


class Hints:
    """Collects wake-up hints from the listener thread."""

    def __init__(self) -> None:
        self.queues: list[str] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)

    def __call__(self, queue: str) -> None:
        with self._arrived:
            self.queues.append(queue)
            self._arrived.notify_all()

    def any_within(self, timeout_s: float) -> bool:
        """Whether any hint has arrived, waiting at most `timeout_s` for the first."""
        with self._arrived:
            return self._arrived.wait_for(lambda: bool(self.queues), timeout_s)

    def wait_past(self, count: int) -> None:
        """Wait until more than `count` hints have arrived."""
        with self._arrived:
            assert self._arrived.wait_for(lambda: len(self.queues) > count, HINT_WAIT_S), \
                f"no hint after the first {count}"

    def wait_for(self, queue: str) -> list[str]:
        with self._arrived:
            assert self._arrived.wait_for(lambda: queue in self.queues, HINT_WAIT_S), \
                f"no hint for {queue!r}; got {self.queues}"
            return list(self.queues)


def test_an_enqueue_from_another_connection_sends_one_hint_per_queue_per_transaction(
    make_store: Callable[..., PostgresStore],
) -> None:
    # Given a store listening, and another store enqueuing
    listening, enqueuing = make_store(), make_store()
    hints = Hints()
    stop = listening.listen(hints)
    try:
        # When one transaction enqueues three jobs on "q" and one on "r",
        # then another enqueues one on "last"
        enqueuing.enqueue([new("q"), new("r"), new("q"), new("q")], T0)
        enqueuing.enqueue([new("last")], T0)
        # Then exactly one hint per Queue arrived for the first, then the second
        received = hints.wait_for("last")
    finally:
        stop()
    assert Counter(received) == {"q": 1, "r": 1, "last": 1}
    assert received[-1] == "last"


def test_a_requeue_resume_or_limit_change_from_another_connection_hints_its_queue(
    make_store: Callable[..., PostgresStore],
) -> None:
    # Given a store listening, and another holding a cancelled job of "billing" and a
    # paused Queue "reports"
    listening, other = make_store(), make_store()
    (job_id,) = other.enqueue([new("billing")], T0)
    assert other.cancel(job_id, T0)
    other.pause_queue("reports")
    ids = other.enqueue([new("x"), new("y"), new("x")], T0)
    for cancelled in ids:
        assert other.cancel(cancelled, T0)
    hints = Hints()
    stop = listening.listen(hints)
    try:
        # When the other requeues the job, pauses a Queue, resumes one, changes a limit,
        # requeues many, then enqueues into "last"
        assert other.requeue(job_id, T0)
        other.pause_queue("paused")
        other.resume_queue("reports")
        other.set_queue_limit("limited", 3)
        other.set_queue_limit("paused", 2)  # paused: no room either way
        assert other.requeue_many(state=JobState.CANCELLED, queue=None, now=T0) == 3
        other.enqueue([new("last")], T0)
        received = hints.wait_for("last")
    finally:
        stop()
    # Then each change that makes work claimable was hinted, once per Queue; the pause
    # and the paused Queue's limit were not
    assert Counter(received) == {"billing": 1, "reports": 1, "limited": 1, "x": 1, "y": 1,
                                 "last": 1}


def test_hints_are_specific_to_the_schema(make_store: Callable[..., PostgresStore]) -> None:
    # Given a listener on schema "rota" and an enqueue into schema "other" first
    listening, other = make_store(), make_store("?schema=other")
    hints = Hints()
    stop = listening.listen(hints)
    try:
        other.enqueue([new("elsewhere")], T0)
        make_store().enqueue([new("here")], T0)
        received = hints.wait_for("here")
    finally:
        stop()
    # Then only the listener's own schema's hint arrived
    assert received == ["here"]


def test_stopping_a_listener_ends_its_thread_and_closes_its_connection(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[tuple[object, ...]],
) -> None:
    # Given a listener
    store = make_store()
    stop = store.listen(lambda queue: None)
    assert [t for t in threading.enumerate() if t.name.startswith("rota-listen-")]
    # When it is stopped (twice: stop is idempotent)
    stop()
    stop()
    # Then its thread has ended
    assert not [t for t in threading.enumerate() if t.name.startswith("rota-listen-")]
    # And closing the store with a listener still running stops that one too
    store.listen(lambda queue: None)
    store.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("rota-listen-")]


def test_a_listener_reconnects_after_its_connection_is_terminated(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[Any],
) -> None:
    # Given a listener whose backend PostgreSQL terminates
    store = make_store()
    hints = Hints()
    stop = store.listen(hints)
    try:
        admin.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
            "WHERE datname = current_database() AND query LIKE 'LISTEN%%'"
        )
        # When jobs keep being enqueued (hints sent while it reconnects are lost, by design)
        arrived = False
        for attempt in range(200):
            store.enqueue([new(f"q{attempt}")], T0)
            arrived = hints.any_within(0.05)
            if arrived:
                break
        # Then hints flow again
        assert arrived, "no hint after the listener's connection was terminated"
    finally:
        stop()


def test_a_failing_callback_does_not_stop_the_listener(
    make_store: Callable[..., PostgresStore], caplog: pytest.LogCaptureFixture,
) -> None:
    store = make_store()
    hints = Hints()

    def callback(queue: str) -> None:
        if queue == "boom":
            raise RuntimeError("callback failed")
        hints(queue)

    stop = store.listen(callback)
    try:
        store.enqueue([new("boom")], T0)
        store.enqueue([new("after")], T0)
        assert hints.wait_for("after") == ["after"]
    finally:
        stop()
    assert "on_enqueue callback failed" in caplog.text


# -- errors and recovery -------------------------------------------------------------------


def test_an_unreachable_server_fails_with_the_password_masked() -> None:
    # Given a URL naming a port where nothing listens
    store = open_store("postgresql://bob:s3cret@127.0.0.1:1/nowhere")
    try:
        # When the store is first used
        with pytest.raises(StoreError) as failed:
            store.count_jobs()
    finally:
        store.close()
    # Then the message names the URL, password masked, and the expected form
    message = str(failed.value)
    assert "postgresql://bob:***@127.0.0.1:1/nowhere" in message
    assert "s3cret" not in message
    assert "postgresql://user:password@host:5432/database" in message


def test_a_key_value_conninfo_has_its_password_masked_too() -> None:
    store = PostgresStore("host=127.0.0.1 port=1 dbname=nowhere user=bob password=s3cret")
    try:
        with pytest.raises(StoreError) as failed:
            store.count_jobs()
    finally:
        store.close()
    assert "password=***" in str(failed.value) and "s3cret" not in str(failed.value)
    assert "s3cret" not in repr(store)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://bob:s3cret@127.0.0.1:notaport/db",
        "postgresql://bob:s3cret@127.0.0.1:5432/",
        "postgresql://bob:s3cret@127.0.0.1:5432/db?schema=Bad-Name",
        "postgresql://bob:s3cret@127.0.0.1:5432/db?pool_max_size=zero",
    ],
)
def test_a_malformed_url_fails_at_construction_with_the_password_masked(url: str) -> None:
    with pytest.raises(StoreConfigError) as failed:
        open_store(url)
    message = str(failed.value)
    assert "bob:***@" in message and "s3cret" not in message
    assert "expected postgresql://" in message


def test_the_postgres_scheme_alias_and_libpq_options_are_accepted(pg_url: str) -> None:
    store = open_store(pg_url.replace("postgresql://", "postgres://", 1)
                       + "?application_name=rota-test&schema=aliased")
    try:
        assert store.count_jobs() == {}
    finally:
        store.close()


def test_the_pool_recovers_after_the_backends_are_terminated(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[tuple[object, ...]],
) -> None:
    # Given a store with warm pooled connections
    store = make_store("?pool_min_size=2")
    store.enqueue([new()], T0)
    assert store.count_jobs() == {("q", JobState.SCHEDULED): 1}
    # When PostgreSQL terminates every backend of the database (as on a restart)
    admin.execute(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    # Then at most one call fails, with a StoreError, and the store works again
    failures = 0
    for _ in range(2):
        try:
            assert store.count_jobs() == {("q", JobState.SCHEDULED): 1}
        except StoreError as error:
            failures += 1
            assert "127.0.0.1" in str(error)
    assert failures <= 1
    assert store.count_jobs() == {("q", JobState.SCHEDULED): 1}


def test_a_closed_store_refuses_calls(make_store: Callable[..., PostgresStore]) -> None:
    store = make_store()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.count_jobs()


def test_the_probe_is_one_index_probe_per_queue_in_its_generic_plan(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[Any],
) -> None:
    # Given many due jobs in one Queue (a probe must not walk them)
    store = make_store()
    store.migrate()
    admin.execute(
        "INSERT INTO rota.jobs (name, queue, state, due_at, args, kwargs, created_at) "
        "SELECT 'due', 'q', 'scheduled', %(t)s, '[]', '{}', %(t)s "
        "FROM generate_series(1, 50000)", {"t": T0 - timedelta(days=1)},
    )
    admin.execute("ANALYZE rota.jobs")
    # When probe.sql is planned without knowing its parameters
    plan = _generic_plan(admin, "probe", {"probe": ["q", "r"], "now": T0,
                                             **floors(2, "probe_")})
    # Then it loops over the Queues probed, one (index-only) probe of jobs_claimable each
    assert "Nested Loop" in plan and "using jobs_claimable" in plan, plan
    assert "Hash" not in plan and "Seq Scan on jobs" not in plan, plan
    # And the store answers which Queues have due work
    assert store.claim([], 0, now=T0, owner="w", lease_expires_at=T0 + LEASE,
                       probe=["q", "r"]).due == {"q"}  # type: ignore[attr-defined]


def test_queue_infos_reads_the_counts_and_walks_only_the_claimable_index(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[Any],
) -> None:
    # Given many finished and many due jobs (written behind the store's back, in one
    # statement: the count triggers of migration 8 still see them)
    store = make_store()
    store.migrate()
    admin.execute(
        "INSERT INTO rota.jobs (name, queue, state, due_at, args, kwargs, created_at, "
        "finished_at) "
        "SELECT 'job', 'q', CASE WHEN i %% 2 = 0 THEN 'succeeded' ELSE 'scheduled' END, "
        "%(t)s, '[]', '{}', %(t)s, CASE WHEN i %% 2 = 0 THEN %(t)s END "
        "FROM generate_series(1, 50000) AS i", {"t": T0 - timedelta(days=1)},
    )
    admin.execute("ANALYZE rota.jobs")
    # When queue_infos.sql is planned without knowing its parameters
    plan = _generic_plan(admin, "queue_infos", {"now": T0})
    # Then it never scans the jobs table: the due jobs are found on jobs_claimable
    assert "Seq Scan on jobs" not in plan, plan
    assert "using jobs_claimable" in plan, plan
    # And the view is exact
    (info,) = store.queue_infos(T0)
    assert info.counts[JobState.SUCCEEDED] == 25_000 and info.due == 25_000
    assert info.oldest_due_at == T0 - timedelta(days=1)


def test_migration_8_counts_the_jobs_of_an_existing_database(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[Any],
) -> None:
    # Given a database at schema version 7 (migration 8 and those after it taken back out)
    # holding jobs of two Queues in three states, written before any count existed
    store = make_store()
    store.migrate()
    admin.execute("DROP VIEW rota.job_counts_now")
    admin.execute("DROP TABLE rota.job_counts, rota.job_count_deltas")
    admin.execute("DROP FUNCTION rota.count_inserted_jobs, rota.count_updated_jobs, "
                  "rota.count_deleted_jobs, rota.fold_job_counts CASCADE")
    admin.execute("ALTER TABLE rota.workers DROP COLUMN clock_offset")  # migration 9
    admin.execute("ALTER TABLE rota.jobs DROP COLUMN last_traceback")  # migration 10
    admin.execute("ALTER TABLE rota.jobs DROP COLUMN debounce_key")  # migration 11
    admin.execute("DROP TABLE rota.group_policies")  # migration 12
    admin.execute("ALTER TABLE rota.queue_settings DROP COLUMN rate_jobs, DROP COLUMN "
                  "rate_per_us, DROP COLUMN rate_burst, DROP COLUMN rate_empty_us, "
                  "DROP COLUMN rate_empty_rem")  # migration 13
    admin.execute("DROP TRIGGER jobs_settle_children ON rota.jobs")  # migration 14
    admin.execute("DROP FUNCTION rota.settle_children")
    admin.execute("DROP TABLE rota.job_edges")
    admin.execute("ALTER TABLE rota.jobs DROP COLUMN parents, DROP COLUMN after_outcome, "
                  "DROP COLUMN waiting_for, DROP COLUMN has_children")
    admin.execute("DROP TABLE rota.leaders")  # migration 15
    admin.execute("ALTER TABLE rota.schedules DROP COLUMN args, DROP COLUMN kwargs, "
                  "DROP COLUMN paused, DROP COLUMN stored")  # stored schedules' migration
    admin.execute("ALTER TABLE rota.jobs DROP COLUMN snoozes, "
                  "DROP COLUMN expires_at")  # migration 19
    admin.execute("ALTER TABLE rota.jobs DROP COLUMN progress, DROP COLUMN errors, "
                  "DROP COLUMN worker")  # migration 20
    admin.execute("DROP INDEX rota.queue_settings_families")  # migration 21
    admin.execute("DROP FUNCTION rota.family_controls")
    admin.execute("DELETE FROM rota.schema_migrations WHERE version >= 8")
    admin.execute(
        "INSERT INTO rota.jobs (name, queue, state, due_at, args, kwargs, created_at, "
        "finished_at) VALUES ('job', 'a', 'succeeded', %(t)s, '[]', '{}', %(t)s, %(t)s), "
        "('job', 'a', 'scheduled', %(t)s, '[]', '{}', %(t)s, NULL), "
        "('job', 'a', 'scheduled', %(t)s, '[]', '{}', %(t)s, NULL), "
        "('job', 'b', 'dead_lettered', %(t)s, '[]', '{}', %(t)s, %(t)s)", {"t": T0})
    # When this rota opens it and changes a job
    upgraded = make_store()
    assert upgraded.migrate() == list(range(8, SCHEMA_VERSION + 1))
    counted = upgraded.count_jobs()
    (dead,) = upgraded.list_jobs(state=JobState.DEAD_LETTERED)
    upgraded.requeue(dead.id, T0)
    # Then the migration counted the existing jobs, and the counts follow changes
    assert counted == {("a", JobState.SUCCEEDED): 1, ("a", JobState.SCHEDULED): 2,
                       ("b", JobState.DEAD_LETTERED): 1}
    assert upgraded.count_jobs() == {("a", JobState.SUCCEEDED): 1,
                                     ("a", JobState.SCHEDULED): 2,
                                     ("b", JobState.SCHEDULED): 1}


# -- workflows ----------------------------------------------------------------------------


def test_a_child_released_by_its_parents_finish_wakes_its_queue(
    make_store: Callable[..., PostgresStore],
) -> None:
    # Given a listener, and another store holding a leased parent
    listening, other = make_store(), make_store()
    (parent,) = other.enqueue([new("parents")], T0)
    (lease,) = [job.lease for job in other.claim(["parents"], 1, now=T0, owner="w",
                                                 lease_expires_at=T0 + LEASE)]
    hints = Hints()
    stop = listening.listen(hints)
    try:
        # When a child is enqueued after it: it waits, and its Queue hears nothing
        (child,) = other.enqueue([NewJob("job", "children", T0, parents=(parent,))], T0)
        other.enqueue([new("marker")], T0)
        assert "children" not in hints.wait_for("marker")
        # And the parent succeeds
        assert other.complete([lease], T0) == 1
        # Then the release of the child wakes its Queue, as an enqueue would
        received = hints.wait_for("children")
    finally:
        stop()
    assert Counter(received)["children"] == 1
    record = other.get_job(child)
    assert record is not None and record.state is JobState.SCHEDULED


def test_an_upgrade_while_a_worker_holds_a_parent_keeps_its_lease_and_positions_the_release(
    make_store: Callable[..., PostgresStore], pg_url: str,
    admin: psycopg.Connection[Any],
) -> None:
    # Given a worker's store holding a leased parent with a child waiting for it, on a
    # database at schema version 21 (settle_children as migration 16 wrote it)
    worker = make_store()
    (parent,) = worker.enqueue([new("parents")], T0)
    (lease,) = [job.lease for job in worker.claim(["parents"], 1, now=T0, owner="w",
                                                  lease_expires_at=T0 + LEASE)]
    (child,) = worker.enqueue([NewJob("job", "children", T0, parents=(parent,))], T0)
    (script,) = next(m for m in migrations() if m.version == 16).statements
    admin.execute(render(script, "rota"))
    admin.execute("DELETE FROM rota.schema_migrations WHERE version > 21")
    # When another node upgrades the database while the lease is held
    assert make_store().migrate() == list(range(22, SCHEMA_VERSION + 1))
    # And the worker completes its parent
    with psycopg.connect(pg_url, autocommit=True) as listening:
        listening.execute("LISTEN rota_enqueue")
        assert worker.complete([lease], T0) == 1
        payloads = [notify.payload for notify in listening.notifies(timeout=HINT_WAIT_S,
                                                                     stop_after=1)]
    # Then the lease held through the upgrade, the child is released, and its hint names
    # where it is due, as the upgraded function sends it
    due_us = int(T0.timestamp()) * 10**6
    assert payloads == [f"children {due_us}"]
    record = worker.get_job(child)
    assert record is not None and record.state is JobState.SCHEDULED
    assert worker.count_jobs() == {("parents", JobState.SUCCEEDED): 1,
                                   ("children", JobState.SCHEDULED): 1}


def test_a_chain_of_a_thousand_is_cancelled_at_once(
    make_store: Callable[..., PostgresStore], admin: psycopg.Connection[Any],
) -> None:
    # Given a chain of 1,000 children, each after the one before, under the server's
    # max_stack_depth (2MB by default): a recursive trigger would nest once per link
    store = make_store()
    (first,) = store.enqueue([new("p")], T0)
    chain = [first]
    for _ in range(1000):
        chain += store.enqueue([NewJob("job", "c", T0, parents=(chain[-1],))], T0)
    (lease,) = [job.lease for job in store.claim(["p"], 1, now=T0, owner="w",
                                                 lease_expires_at=T0 + LEASE)]
    # When the first link dead-letters
    assert store.dead_letter(lease, T0, "Boom: failed")
    # Then every link is cancelled in that transaction, each naming its own parent
    rows = admin.execute("SELECT id, state, last_error FROM rota.jobs WHERE queue = 'c' "
                         "ORDER BY id").fetchall()
    assert [row[1] for row in rows] == ["cancelled"] * 1000
    assert all(f"parent job {parent} ended" in str(row[2])
               for parent, row in zip(chain, rows, strict=False))
    assert store.count_jobs()[("c", JobState.CANCELLED)] == 1000


def test_an_enqueue_of_children_never_holds_one_parent_while_it_waits_for_another(
    make_store: Callable[..., PostgresStore], pg_url: str,
) -> None:
    # Given two leased parents, and a batch of outcomes holding the second (uncommitted)
    store = make_store()
    first, second = store.enqueue([new("p"), new("p")], T0)
    leases = {job.id: job.lease for job in store.claim(["p"], 2, now=T0, owner="w",
                                                       lease_expires_at=T0 + LEASE)}
    with psycopg.connect(pg_url) as holder:
        holder.execute("SET lock_timeout = '5s'")
        holder.execute("UPDATE rota.jobs SET state = 'succeeded', finished_at = %(t)s, "
                       "lease_owner = NULL, lease_expires_at = NULL WHERE id = %(id)s",
                       {"t": T0, "id": second})
        # When a child of both is enqueued meanwhile: it must wait for the second
        made: list[int] = []
        enqueuer = threading.Thread(target=lambda: made.extend(store.enqueue(
            [NewJob("job", "c", T0, parents=(first, second))], T0)))
        enqueuer.start()
        waiting = False  # polled on the server, with a generous deadline
        with psycopg.connect(pg_url, autocommit=True) as watcher:
            for _ in range(int(HINT_WAIT_S / 0.01)):
                (count,) = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                    "current_database() AND wait_event_type = 'Lock'").fetchone() or (0,)
                if count:
                    waiting = True
                    break
                threading.Event().wait(0.01)
        assert waiting and not made
        # Then the batch can still take the first parent (the enqueue holds neither while
        # it waits: no deadlock), and commits
        holder.execute("UPDATE rota.jobs SET state = 'succeeded', finished_at = %(t)s, "
                       "lease_owner = NULL, lease_expires_at = NULL WHERE id = %(id)s",
                       {"t": T0, "id": first})
        holder.commit()
        enqueuer.join()
    # And the child saw both parents finished: it starts scheduled
    (child,) = made
    record = store.get_job(child)
    assert record is not None and record.state is JobState.SCHEDULED
    assert store.job_children(first) == store.job_children(second) == [child]
    assert leases


# -- finish hints -------------------------------------------------------------------------


def _finish_notifications(pg_url: str, act: Callable[[], None],
                          admin: psycopg.Connection[tuple[object, ...]]) -> int:
    """How many notifications on the finish channel `act` sent: a marker notification sent
    after it arrives after all of them (PostgreSQL delivers in commit order)."""
    with psycopg.connect(pg_url, autocommit=True) as listening:
        listening.execute("LISTEN rota_finished")
        act()
        admin.execute("SELECT pg_notify('rota_finished', 'marker')")
        for count, notify in enumerate(listening.notifies(timeout=HINT_WAIT_S)):
            if notify.payload == "marker":
                return count
    raise AssertionError("the marker notification never came")


def test_statements_that_finish_no_job_send_no_finish_hint(
    make_store: Callable[..., PostgresStore], pg_url: str,
    admin: psycopg.Connection[tuple[object, ...]],
) -> None:
    # Given three leased jobs
    store = make_store()
    store.enqueue([new(), new(), new()], T0)
    first, second, third = store.claim(["q"], 3, now=T0, owner="w",
                                       lease_expires_at=T0 + LEASE)

    def act() -> None:
        # When one is retried, one released and one marked for cancel, and a stale lease
        # is completed
        assert store.retry(first.lease, T0, T0, "again")
        assert store.release([second.lease], T0) == 1
        assert store.cancel(third.id, T0)
        assert store.complete([first.lease], T0) == 0
        assert store.expire_lease(third.lease, T0 + 2 * LEASE, T0, "x")  # cancel requested
        # (that last one finished a job: the one hint expected)

    # Then none of them notified, but the last
    assert _finish_notifications(pg_url, act, admin) == 1


def test_a_batch_of_successes_sends_one_finish_hint(
    make_store: Callable[..., PostgresStore], pg_url: str,
    admin: psycopg.Connection[tuple[object, ...]],
) -> None:
    store = make_store()
    store.enqueue([new() for _ in range(20)], T0)
    jobs = store.claim(["q"], 20, now=T0, owner="w", lease_expires_at=T0 + LEASE)

    def act() -> None:
        assert store.complete([job.lease for job in jobs], T0) == 20

    assert _finish_notifications(pg_url, act, admin) == 1
    assert {job.state for job in store.list_jobs()} == {JobState.SUCCEEDED}
