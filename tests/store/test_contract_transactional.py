"""Transactional enqueue (`Store.enqueue_on`), run on every store: the jobs are written on
the caller's own connection, inside its transaction, and exist if and only if it commits.
The memory store has no connection: TypeError."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rota.core.jobs import JobState, NewJob
from rota.store import Store, StoreError, open_store
from tests.store.callers import callers_connection

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def store_url(durable_store_url: str) -> str:
    """Every test here runs on the durable stores (the memory store: its own test)."""
    return durable_store_url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'rota.db'}"


@pytest.fixture
def postgres_url(request: pytest.FixtureRequest) -> Iterator[str]:
    from tests.conftest import POSTGRES_URL
    from tests.pg import fresh_postgres_url

    yield from fresh_postgres_url(POSTGRES_URL, request.node.name)


def new(queue: str = "q", name: str = "job") -> NewJob:
    return NewJob(name=name, queue=queue, due_at=T0, args_json='["x"]')


def test_memory_store_refuses_a_connection() -> None:
    store = open_store("memory://")
    with pytest.raises(TypeError, match=r"memory:// store .* cannot enqueue on a connection"):
        store.enqueue_on(object(), [new()], T0)
    assert store.count_jobs() == {}


def test_jobs_exist_once_the_caller_commits(store_url: str, store: Store) -> None:
    with callers_connection(store_url) as conn:
        # Given the caller's transaction with a row of its own and two jobs
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        conn.commit()
        conn.execute("INSERT INTO orders (id) VALUES (42)")
        ids = store.enqueue_on(conn, [new(), new("other")], T0)
        # Then, before the commit, another connection sees neither
        assert len(ids) == 2 and ids[0] < ids[1]
        assert store.get_job(ids[0]) is None and store.count_jobs() == {}
        # When the caller commits
        conn.commit()
    # Then both jobs exist, due and claimable like any other
    job = store.get_job(ids[0])
    assert job is not None and (job.name, job.queue, job.state, job.args) == (
        "job", "q", JobState.SCHEDULED, ("x",))
    claimed = store.claim(["q", "other"], 5, now=T0, owner="w", lease_expires_at=T0)
    assert [j.id for j in claimed] == ids


def test_a_rollback_leaves_no_job(store_url: str, store: Store) -> None:
    with callers_connection(store_url) as conn:
        store.enqueue_on(conn, [new()], T0)
        conn.rollback()
    assert store.count_jobs() == {}
    # And the store's own enqueue still works afterwards
    assert store.enqueue([new()], T0)


def test_the_wrong_kind_of_connection_is_a_type_error(store_url: str, store: Store) -> None:
    expected = "sqlite3.Connection" if store_url.startswith("sqlite:") else "psycopg.Connection"
    with pytest.raises(TypeError, match=expected):
        store.enqueue_on(object(), [new()], T0)
    if store_url.startswith("postgres"):
        other = sqlite3.connect(":memory:")
        try:
            with pytest.raises(TypeError, match=r"got sqlite3\.Connection"):
                store.enqueue_on(other, [new()], T0)
        finally:
            other.close()
    assert store.count_jobs() == {}


def test_bad_jobs_write_nothing_and_leave_the_callers_transaction_usable(
    store_url: str, store: Store
) -> None:
    with callers_connection(store_url) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO orders (id) VALUES (1)")
        # A job name that no store accepts is refused before anything is sent
        with pytest.raises(ValueError, match="job name"):
            store.enqueue_on(conn, [new(), NewJob("bad\nname", "q", T0)], T0)
        ids = store.enqueue_on(conn, [new()], T0)
        conn.commit()
        assert conn.execute("SELECT count(*) FROM orders").fetchone()[0] == 1
    assert [job.id for job in store.list_jobs()] == ids


def test_sqlite_connection_to_another_file_is_refused(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    other = sqlite3.connect(":memory:")
    try:
        with pytest.raises(StoreError, match="not on the store's file"):
            store.enqueue_on(other, [new()], T0)
    finally:
        other.close()
        store.close()


@pytest.mark.parametrize("mode", ["legacy-idle", "autocommit", "explicit-begin"])
def test_sqlite_transaction_modes(sqlite_url: str, mode: str) -> None:
    store_url = sqlite_url
    store = open_store(store_url)
    request_close = store.close
    options = {"isolation_level": None} if mode != "legacy-idle" else {}
    with callers_connection(store_url, **options) as conn:
        if mode == "explicit-begin":
            conn.execute("BEGIN IMMEDIATE")
        (job_id,) = store.enqueue_on(conn, [new()], T0)
        if mode == "autocommit":
            # No transaction to join: committed at once, like any statement on it
            assert not conn.in_transaction and store.get_job(job_id) is not None
        else:
            # Legacy mode with no transaction open: one is begun for the caller
            assert conn.in_transaction and store.get_job(job_id) is None
            conn.execute("ROLLBACK")
    assert (store.get_job(job_id) is None) == (mode != "autocommit")
    request_close()


def test_postgres_wake_up_is_sent_on_commit_only(postgres_url: str) -> None:
    store_url = postgres_url
    store = open_store(store_url)
    heard: list[str] = []
    arrived = threading.Condition()

    def on_enqueue(queue: str) -> None:
        with arrived:
            heard.append(queue)
            arrived.notify_all()

    def wait_for(queue: str) -> None:
        with arrived:
            assert arrived.wait_for(lambda: queue in heard, timeout=10)

    stop = store.listen(on_enqueue)  # type: ignore[attr-defined]
    try:
        with callers_connection(store_url) as conn:
            # Given jobs enqueued on the caller's open transaction
            store.enqueue_on(conn, [new("txn")], T0)
            # When a later, committed enqueue's hint arrives, the open one sent none
            store.enqueue([new("marker-1")], T0)
            wait_for("marker-1")
            assert "txn" not in heard
            # And a rollback sends none either
            conn.rollback()
            store.enqueue([new("marker-2")], T0)
            wait_for("marker-2")
            assert "txn" not in heard
            # When the caller commits, the hint comes
            store.enqueue_on(conn, [new("txn")], T0)
            conn.commit()
            wait_for("txn")
    finally:
        stop()
        store.close()


def test_unique_keys_hold_on_the_callers_connection(store_url: str, store: Store) -> None:
    # Given a committed live job with key k
    (live,) = store.enqueue([NewJob("job", "q", T0, key="k")], T0)
    with callers_connection(store_url) as conn:
        # When the caller enqueues k again, and k2 twice, in its transaction
        ids = store.enqueue_on(conn, [NewJob("job", "q", T0, key="k"),
                                      NewJob("job", "q", T0, key="k2"),
                                      NewJob("job", "q", T0, key="k2")], T0)
        conn.commit()
    # Then k answers the live job and k2 made one job
    assert ids[0] == live and ids[1] == ids[2] != live
    assert sum(store.count_jobs().values()) == 2
    with callers_connection(store_url) as conn:
        # And a rolled-back keyed job holds nothing afterwards
        (rolled,) = store.enqueue_on(conn, [NewJob("job", "q", T0, key="k3")], T0)
        conn.rollback()
    (k3,) = store.enqueue([NewJob("job", "q", T0, key="k3")], T0)
    assert store.get_job(k3) is not None and sum(store.count_jobs().values()) == 3
    assert rolled  # an id was answered inside the transaction


def test_sqlite_failure_midway_undoes_only_rotas_writes(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    try:
        with callers_connection(sqlite_url) as conn:
            # Given the caller's own row, and a trigger that fails the second job's insert
            conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
            conn.execute("INSERT INTO orders (id) VALUES (1)")
            conn.execute("CREATE TEMP TRIGGER boom BEFORE INSERT ON rota_jobs "
                         "WHEN NEW.queue = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END")
            # When a batch fails midway
            with pytest.raises(sqlite3.IntegrityError, match="boom"):
                store.enqueue_on(conn, [new(), new("boom")], T0)
            # Then the caller's transaction goes on, without the batch's first job
            assert conn.in_transaction
            conn.commit()
            assert conn.execute("SELECT count(*) FROM orders").fetchone()[0] == 1
        assert store.count_jobs() == {}
    finally:
        store.close()


def test_children_take_the_same_path_on_the_callers_connection(store_url: str,
                                                               store: Store) -> None:
    # Given a parent that succeeded and one still scheduled
    done, open_ = store.enqueue([new("p"), new("p")], T0)
    lease = store.claim(["p"], 1, now=T0, owner="w", lease_expires_at=T0)[0].lease
    assert store.complete([lease], T0) == 1
    with callers_connection(store_url) as conn:
        # When the caller enqueues children of them in its transaction, and a batch naming
        # a parent that does not exist (refused, its transaction still usable)
        ready, waiting = store.enqueue_on(conn, [
            NewJob("job", "c", T0, parents=(done,)),
            NewJob("job", "c", T0, parents=(done, open_))], T0)
        with pytest.raises(ValueError, match="does not exist"):
            store.enqueue_on(conn, [NewJob("job", "c", T0, parents=(done, 999_999))], T0)
        # Then nothing is visible before the commit
        assert store.job_children(done) == []
        conn.commit()
    # And after it each child started as its parents say, counted in that state
    assert store.job_children(done) == [ready, waiting]
    assert store.job_children(open_) == [waiting]
    states = {job.id: job.state for job in store.list_jobs(queue="c")}
    assert states == {ready: JobState.SCHEDULED, waiting: JobState.WAITING}
    assert store.count_jobs()[("c", JobState.WAITING)] == 1
    # And the other parent's end releases the waiting one
    lease = store.claim(["p"], 1, now=T0, owner="w", lease_expires_at=T0)[0].lease
    assert store.complete([lease], T0) == 1
    record = store.get_job(waiting)
    assert record is not None and record.state is JobState.SCHEDULED
    assert record.parents == (done, open_)


def test_children_enqueued_on_the_callers_connection_wait_once_it_commits(
    store_url: str, store: Store
) -> None:
    # Given a parent, committed
    (parent,) = store.enqueue([new("p")], T0)
    with callers_connection(store_url) as conn:
        # When the caller enqueues a child after it, and a plain job, in its transaction
        child, plain = store.enqueue_on(
            conn, [NewJob("job", "c", T0, parents=(parent,)), new("q")], T0)
        # Then, before the commit, neither exists and the parent has no children
        assert store.get_job(child) is None and store.job_children(parent) == []
        conn.commit()
        # And a rolled-back child leaves nothing behind
        (rolled,) = store.enqueue_on(conn, [NewJob("job", "c", T0, parents=(parent,))], T0)
        conn.rollback()
        # And an unknown parent is refused, the caller's transaction still usable
        with pytest.raises(ValueError, match="does not exist"):
            store.enqueue_on(conn, [NewJob("job", "c", T0, parents=(parent, 987_654))], T0)
        conn.rollback()
    # Then the committed child waits for its parent, and runs once it succeeded
    record = store.get_job(child)
    assert record is not None and record.state is JobState.WAITING
    assert record.parents == (parent,)
    assert store.get_job(rolled) is None and store.job_children(parent) == [child]
    held = store.claim(["p", "q"], 5, now=T0, owner="w", lease_expires_at=T0)
    assert sorted(job.id for job in held) == [parent, plain]
    assert store.complete([job.lease for job in held], T0) == 2
    assert [job.id for job in store.claim(["c"], 5, now=T0, owner="w",
                                          lease_expires_at=T0)] == [child]


def test_meta_is_written_on_the_callers_connection(store_url: str, store: Store) -> None:
    # Given a job with meta enqueued on the caller's connection, and committed
    with callers_connection(store_url) as conn:
        job_id, = store.enqueue_on(conn, [NewJob("job", "q", T0, meta_json='{"t":"acme"}')],
                                   T0)
        conn.commit()
    # Then it holds its meta, and a search finds it
    assert store.get_job(job_id).meta == {"t": "acme"}  # type: ignore[union-attr]
    assert [job.id for job in store.find_jobs(meta={"t": "acme"})] == [job_id]
