"""The health check (`App.health`, `rota.app.status.check_store_url`): the store answers, its
schema is current, live workers serve the App's Queues; never creating or migrating."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import psycopg

import rota
from rota.app.status import check_store_url
from rota.core.workers import WorkerGroupInfo, WorkerInfo
from rota.store import open_store
from rota.store.base import Migratable
from rota.store.memory import MemoryStore
from tests.conftest import START


def register_worker(store: rota.Store, policy: rota.DispatchPolicy, *, alive: bool = True,
                    worker_id: str = "host:1:tok", group_name: str = "g") -> None:
    """A worker row running one group with `policy`, alive at START (or dead by then)."""
    dead_at = START + timedelta(minutes=5) if alive else START - timedelta(seconds=1)
    group = WorkerGroupInfo(name=group_name, policy=policy, pool_size=2,
                            owner=f"{group_name}@{worker_id}")
    store.register_worker(WorkerInfo(
        id=worker_id, host="host", pid=1, version=rota.__version__,
        started_at=START - timedelta(minutes=10), last_seen=START - timedelta(minutes=1),
        dead_at=dead_at, groups=(group,)), START - timedelta(minutes=10))


def create(url: str) -> None:
    """Create the store at `url`, as a worker's start does."""
    with closing(open_store(url)) as store:
        assert isinstance(store, Migratable)
        store.migrate()


def set_schema_behind(url: str) -> int:
    """Take the last migration's record out of the store at `url`; the version it is at."""
    with closing(open_store(url)) as store:
        assert isinstance(store, Migratable)
        known = store.known_schema_version()
    if url.startswith("sqlite"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
            conn.execute(f"PRAGMA user_version = {known - 1}")
    else:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DELETE FROM rota.schema_migrations WHERE version = %s", (known,))
    return known - 1


def schema_version_of(url: str) -> int:
    if url.startswith("sqlite"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
    with psycopg.connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass('rota.schema_migrations')").fetchone()
        if exists is None or exists[0] is None:
            return 0
        row = conn.execute("SELECT max(version) FROM rota.schema_migrations").fetchone()
        return int(row[0] or 0) if row else 0


def test_a_current_store_is_healthy(durable_store_url: str) -> None:
    # Given a store a worker created
    create(durable_store_url)
    # When it is checked by URL
    health = check_store_url(durable_store_url)
    # Then it is ok, with its schema version the one this rota reaches
    assert health.ok and health.problems == ()
    assert health.schema_version == health.known_schema_version is not None
    assert health.to_json()["ok"] is True


def test_a_schema_behind_is_unhealthy_and_left_as_it_is(durable_store_url: str) -> None:
    # Given a store whose schema lacks this rota's last migration
    create(durable_store_url)
    behind = set_schema_behind(durable_store_url)
    # When it is checked
    health = check_store_url(durable_store_url)
    # Then it is not ok, the reason says what to run, and the schema was not migrated
    assert not health.ok
    [problem] = health.problems
    assert f"schema version {behind}" in problem and "rota migrate" in problem
    assert schema_version_of(durable_store_url) == behind


def test_a_store_that_does_not_exist_is_unhealthy_and_not_created(
    durable_store_url: str,
) -> None:
    # Given an empty database, or an SQLite path with no file
    # When it is checked
    health = check_store_url(durable_store_url)
    # Then it is not ok, and nothing was created
    assert not health.ok
    [problem] = health.problems
    assert ("does not exist" in problem) if durable_store_url.startswith("sqlite") \
        else ("holds no rota schema (version 0)" in problem)
    if durable_store_url.startswith("sqlite"):
        assert not Path(durable_store_url.removeprefix("sqlite:///")).exists()
    else:
        assert schema_version_of(durable_store_url) == 0


def test_a_schema_from_a_newer_rota_is_unhealthy(durable_store_url: str) -> None:
    create(durable_store_url)
    if durable_store_url.startswith("sqlite"):
        with closing(sqlite3.connect(durable_store_url.removeprefix("sqlite:///"))) as conn:
            conn.execute("PRAGMA user_version = 999")
    else:
        with psycopg.connect(durable_store_url, autocommit=True) as conn:
            conn.execute("INSERT INTO rota.schema_migrations VALUES (999, 'future')")
    health = check_store_url(durable_store_url)
    assert not health.ok and "999" in health.problems[0] and "rota" in health.problems[0]


def test_a_postgresql_server_that_does_not_answer_is_unhealthy() -> None:
    # Given a PostgreSQL URL where nothing listens
    url = "postgresql://postgres@127.0.0.1:1/nothing"
    # Then the URL check and an App on it say the store does not answer
    health = check_store_url(url)
    assert not health.ok and "does not answer" in health.problems[0]
    app = rota.App(url)
    try:
        assert "does not answer" in app.health().problems[0]
    finally:
        app.close()


def test_a_store_that_fails_is_unhealthy(clock: rota.VirtualClock) -> None:
    class Down(MemoryStore):
        def list_workers(self, now: object) -> list[WorkerInfo]:
            raise rota.StoreError("connection refused")

    health = rota.App(Down(), clock=clock).health()
    assert not health.ok and health.problems == (
        "the store does not answer: connection refused",)


def test_a_malformed_url_is_unhealthy_with_the_reason() -> None:
    health = check_store_url("nonsense://x")
    assert not health.ok and "cannot be opened" in health.problems[0]


def test_app_health_needs_a_live_worker_for_every_queue(
    make_app: object, clock: rota.VirtualClock,
) -> None:
    # Given an App whose groups serve a, b and c
    assert callable(make_app)
    app: rota.App = make_app()
    if isinstance(app.store, Migratable):
        app.store.migrate()  # as a worker's start does
    app.add_worker_group(rota.WorkerGroupOptions(
        name="fair", policy=rota.Weighted([("a", 2), ("b", 1)])))
    app.add_worker_group(rota.WorkerGroupOptions(name="one", policy=rota.Strict("c", "a")))
    # When no worker runs: unhealthy, every Queue unserved
    health = app.health()
    assert not health.ok and health.unserved == ("a", "b", "c")
    assert "no live worker serves Queue(s) 'a', 'b', 'c'" in health.problems[0]
    # Without the worker question, the store alone is fine
    assert app.health(served=False).ok
    # When a dead worker once served them all, and a live one serves only a and b
    register_worker(app.store, rota.Strict("a", "b", "c"), alive=False, worker_id="h:0:old")
    register_worker(app.store, rota.Strict("b", "a"))
    health = app.health()
    # Then c is the one unserved
    assert not health.ok and health.unserved == ("c",) and health.queues == ("a", "b", "c")
    # And once a live worker serves c too, it is healthy
    register_worker(app.store, rota.Strict("c"), worker_id="h:2:tok", group_name="h")
    health = app.health()
    assert health.ok and health.problems == () and health.unserved == ()


def test_an_app_without_groups_checks_its_store_only(make_app: object) -> None:
    assert callable(make_app)
    app: rota.App = make_app()
    if isinstance(app.store, Migratable):
        app.store.migrate()  # as a worker's start does
    health = app.health()
    assert health.ok and health.queues == ()
    assert (health.schema_version is None) == app.store.url.startswith("memory")
