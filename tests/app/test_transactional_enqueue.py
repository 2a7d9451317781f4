"""Transactional enqueue through the App:
`job.configure(connection=conn).enqueue(...)` writes on the caller's connection, inside its
transaction; the job exists if and only if it commits, and a worker then runs it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import rota
from tests.store.callers import callers_connection


@pytest.fixture
def app(durable_store_url: str, clock: rota.VirtualClock) -> Iterator[rota.App]:
    opened = rota.App(durable_store_url, clock=clock)
    yield opened
    opened.close()


def serving(app: rota.App) -> rota.App:
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))
    return app


def test_commit_makes_the_job_and_a_worker_runs_it(app: rota.App) -> None:
    ran: list[str] = []

    @app.job("welcome", queue="q")
    def welcome(user: str) -> None:
        ran.append(user)

    serving(app)
    with callers_connection(app.store.url) as conn:
        # Given the user's row and its job in one transaction
        conn.execute("CREATE TABLE users (name TEXT)")
        conn.execute("INSERT INTO users (name) VALUES ('ada')")
        job_id = welcome.configure(connection=conn).enqueue("ada")
        (many_a, many_b) = welcome.configure(connection=conn).enqueue_many([("b",), ("c",)])
        # Then nothing is visible before the commit (no claim here: on SQLite the open
        # transaction holds the write lock, and a claim would wait its busy timeout)
        assert app.get_job(job_id) is None
        conn.commit()
    # When it commits, the jobs exist and run
    assert app.run_until_idle() == 3
    assert ran == ["ada", "b", "c"] and job_id < many_a < many_b
    record = app.get_job(job_id)
    assert record is not None and record.state is rota.JobState.SUCCEEDED


def test_rollback_leaves_no_job(app: rota.App) -> None:
    @app.job("welcome", queue="q")
    def welcome(user: str) -> None: ...

    serving(app)
    with callers_connection(app.store.url) as conn:
        welcome.configure(connection=conn).enqueue("ada")
        welcome.configure(connection=conn, delay=5).enqueue_many([("b",)])
        conn.rollback()
    assert app.run_until_idle() == 0
    assert app.store.count_jobs() == {}


def test_bad_arguments_and_wrong_connections_store_nothing(app: rota.App) -> None:
    @app.job("welcome", queue="q")
    def welcome(user: str) -> None: ...

    with pytest.raises(TypeError, match="enqueues on a"):
        welcome.configure(connection=object()).enqueue("ada")
    with callers_connection(app.store.url) as conn:
        with pytest.raises(TypeError, match="job 'welcome'"):
            welcome.configure(connection=conn).enqueue()  # type: ignore[call-arg]
        conn.commit()
    assert app.store.count_jobs() == {}


def test_memory_store_refuses_a_connection(clock: rota.VirtualClock) -> None:
    app = rota.App("memory://", clock=clock)
    job = app.job("j")(lambda: None)
    with pytest.raises(TypeError, match="sqlite:/// or postgresql://"):
        job.configure(connection=object()).enqueue()
    assert app.store.count_jobs() == {}


def test_a_running_worker_is_woken_by_the_commit(durable_store_url: str) -> None:
    # Given a real-time worker that polls only every 60 s, so only a wake-up can be quick
    app = rota.App(durable_store_url)
    done = asyncio.Event()
    loop_box: list[asyncio.AbstractEventLoop] = []

    @app.job("welcome", queue="q")
    def welcome(user: str) -> None:
        loop_box[0].call_soon_threadsafe(done.set)

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("q"), poll_interval=60))

    async def scenario() -> None:
        loop_box.append(asyncio.get_running_loop())
        async with app.serve():
            with callers_connection(app.store.url) as conn:
                await welcome.configure(connection=conn).enqueue_async("ada")
                conn.commit()
            # Then the worker runs it well before its next poll
            await asyncio.wait_for(done.wait(), 30)

    try:
        asyncio.run(scenario())
    finally:
        app.close()


@pytest.fixture
def postgres_app(clock: rota.VirtualClock, request: pytest.FixtureRequest) -> Iterator[rota.App]:
    from tests.conftest import POSTGRES_URL
    from tests.pg import fresh_postgres_url

    for url in fresh_postgres_url(POSTGRES_URL, request.node.name):
        opened = rota.App(url, clock=clock)
        try:
            yield opened
        finally:
            opened.close()


def test_enqueue_async_on_a_psycopg_async_connection(postgres_app: rota.App) -> None:
    import psycopg

    from rota.store.postgres import parse_url as _parse_url

    app = serving(postgres_app)
    ran: list[int] = []

    @app.job("charge", queue="q")
    def charge(order: int) -> None:
        ran.append(order)

    async def scenario() -> tuple[int, int]:
        conninfo = _parse_url(app.store.url)[0]
        async with await psycopg.AsyncConnection.connect(conninfo) as conn:
            # Given jobs enqueued, with and without a key, on the caller's async connection
            plain = await charge.configure(connection=conn).enqueue_async(1)
            keyed = await charge.configure(connection=conn, key="o2").enqueue_async(2)
            again = await charge.configure(connection=conn, key="o2").enqueue_async(3)
            assert again == keyed and app.get_job(plain) is None  # not before the commit
            await conn.commit()
            # And one rolled back
            await charge.configure(connection=conn).enqueue_async(4)
            await conn.rollback()
        async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
            # An autocommit connection has no transaction to join: committed at once
            auto = await charge.configure(connection=conn, key="o5").enqueue_async(5)
            assert app.get_job(auto) is not None
        return plain, keyed

    asyncio.run(scenario())
    assert app.run_until_idle() == 3 and sorted(ran) == [1, 2, 5]
