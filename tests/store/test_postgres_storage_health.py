"""The PostgreSQL store's report on its storage (`storage_health`, one read of the
statistics views): who holds the xmin horizon, named; rota's tables' dead rows; the
health check's own connection left out; what another role's backend hides.

Each test gets a fresh database (tests/pg.py); the server's autovacuum is off, so dead
rows stay. The 5-minute limit is a parameter: the tests use a fraction of a second.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

pytest.importorskip("psycopg")

import psycopg

from rota.app.status import check_health
from rota.core.storage_health import StorageHealth, StorageLimits, storage_warnings
from rota.store import StoreClock
from rota.store.postgres import PostgresStore

pytestmark = pytest.mark.postgres

WAIT_S = 20.0  # upper bound for the statistics or an age to arrive; tests end as soon as


def eventually(store: PostgresStore, holds: Callable[[StorageHealth], bool]) -> StorageHealth:
    """Read until `holds` (the statistics arrive a moment after the writes), at most WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while True:
        health = store.storage_health()
        if holds(health) or time.monotonic() > deadline:
            return health
        time.sleep(0.05)


@pytest.fixture
def holder(pg_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A connection left idle in a transaction that has an xid: it holds the horizon."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET application_name = 'report-42'")
        conn.execute("BEGIN")
        conn.execute("SELECT txid_current() /* the long report */")
        yield conn
        conn.execute("ROLLBACK")


def test_a_held_transaction_is_named_and_the_check_itself_is_not(
    make_store: Callable[..., PostgresStore],
    holder: psycopg.Connection[tuple[object, ...]],
) -> None:
    store = make_store()
    store.migrate()
    pid = str(holder.info.backend_pid)
    health = eventually(store, lambda h: any(
        x.name == pid and (x.age_s or 0) > 0.2 for x in h.holders))
    [held] = [x for x in health.holders if x.name == pid]
    assert held.kind == "backend" and held.application == "report-42"
    assert held.state == "idle in transaction" and held.started_at is not None
    assert "txid_current()" in held.query and held.age_xids is not None
    assert health.has_horizon and health.horizon_age_s >= held.age_s  # type: ignore[operator]
    with store._connect() as own:  # a connection of the store's: its pid is not this one's
        assert all(x.name != str(own.info.backend_pid) for x in store.storage_health().holders)
    [warning] = storage_warnings(health, StorageLimits(horizon_age_s=0.2))
    assert f"backend pid {pid}, application 'report-42'" in warning
    assert "txid_current()" in warning
    assert storage_warnings(health) == ()  # far from the 5 minutes

    answer = check_health(store, StoreClock(store), limits=StorageLimits(horizon_age_s=0.2))
    assert answer.ok and len(answer.warnings) == 1 and pid in answer.warnings[0]


def test_nothing_held_reads_an_empty_horizon(make_store: Callable[..., PostgresStore]) -> None:
    store = make_store()
    store.migrate()
    health = store.storage_health()
    # Only this database's backends count; the check's own read is left out.
    assert [x for x in health.holders if x.kind == "backend"] == []
    assert {t.table for t in health.tables} >= {"jobs", "workers", "served"}


def test_a_table_with_more_dead_rows_than_live_ones_is_named(
    pg_url: str, make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store()
    store.migrate()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE rota.filler AS SELECT g AS n FROM generate_series(1, 12000) g")
        conn.execute("DELETE FROM rota.filler WHERE n > 500")
        conn.execute("CREATE TABLE public.elsewhere AS SELECT 1 AS n")  # not rota's schema
        conn.execute("SELECT pg_stat_force_next_flush()")
    health = eventually(store, lambda h: any(
        t.table == "filler" and t.dead >= 11500 for t in h.tables))
    [filler] = [t for t in health.tables if t.table == "filler"]
    assert (filler.live, filler.dead) == (500, 11500)
    assert "elsewhere" not in {t.table for t in health.tables}
    [warning] = storage_warnings(health)
    assert warning.startswith("table filler carries more dead rows than live ones "
                              "(11,500 dead, 500 live)")


@pytest.fixture
def plain_role(pg_url: str) -> Iterator[str]:
    """The URL of the fresh database as a role without pg_read_all_stats; dropped after."""
    role = f"rota_t_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
    parts = urlsplit(pg_url)
    host = parts.netloc.rsplit("@", 1)[-1]
    try:
        yield urlunsplit(parts._replace(netloc=f"{role}@{host}"))
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_another_roles_backend_is_judged_by_its_age_in_transactions(
    make_store: Callable[..., PostgresStore],
    holder: psycopg.Connection[tuple[object, ...]], plain_role: str,
) -> None:
    make_store().migrate()
    store = PostgresStore.from_url(plain_role)
    try:
        pid = str(holder.info.backend_pid)
        health = eventually(store, lambda h: any(x.name == pid for x in h.holders))
        [held] = [x for x in health.holders if x.name == pid]
        assert held.age_s is None and held.query == "" and held.age_xids is not None
        [warning] = storage_warnings(health, StorageLimits(horizon_age_xids=0))
        assert f"backend pid {pid}" in warning and "query hidden" in warning
        assert storage_warnings(health) == ()
    finally:
        store.close()
