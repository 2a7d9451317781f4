"""Retention inside real workers: real time, a short cadence, every store.

Tests wait for conditions (outcomes, then the store emptying) with generous deadlines;
they never sleep for a fixed time and never assert a duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rota
from rota.core.jobs import JobState
from rota.store import Store, open_store
from tests.waiting import until
from tests.worker.conftest import Outcomes

DEADLINE_S = 15.0  # generous: a loaded machine, every store
QUICK_RETENTION = rota.Retention(succeeded=0.01, failed=None, interval=0.05)


@pytest.fixture
def shared_store(store_url: str) -> Iterator[Callable[[], Store]]:
    """Factory of store objects on one fresh store (one object for memory://)."""
    opened: list[Store] = []
    memory = open_store(store_url) if store_url == "memory://" else None

    def factory() -> Store:
        if memory is not None:
            return memory
        store = open_store(store_url)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()
    if memory is not None:
        memory.close()


def make_app(store: Store, retention: rota.Retention | None) -> rota.App:
    app = rota.App(store, retention=retention)

    @app.job("ok")
    def ok() -> None:
        pass

    @app.job("bad", retry=rota.RetryPolicy(max_attempts=1))
    def bad() -> None:
        raise RuntimeError("no")

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=4, poll_interval=0.05))
    return app


def test_a_worker_deletes_expired_finished_jobs_and_keeps_the_rest(
    shared_store: Callable[[], Store],
) -> None:
    # Given a worker keeping successes 10 ms and failures forever, looking every 50 ms
    store = shared_store()
    app = make_app(store, QUICK_RETENTION)
    app.jobs["ok"].enqueue_many([()] * 20)
    (dead,) = app.jobs["bad"].enqueue_many([()])
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(21)
            # When the retention duty has had its turns
            await until(lambda: store.count_jobs() == {("default", JobState.DEAD_LETTERED): 1},
                        DEADLINE_S)

    # Then the successes are gone and the dead letter is kept
    asyncio.run(scenario())
    job = store.get_job(dead)
    assert job is not None and job.state is JobState.DEAD_LETTERED
    assert job.finished_at is not None


def test_without_retention_a_worker_deletes_nothing(shared_store: Callable[[], Store]) -> None:
    store = shared_store()
    app = make_app(store, None)
    app.jobs["ok"].enqueue_many([()] * 5)
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(5)

    asyncio.run(scenario())
    assert store.count_jobs() == {("default", JobState.SUCCEEDED): 5}


class FailingPurge:
    """Delegates to a real store; the first `failures[0]` purge calls through any wrapper
    sharing the `failures` list raise."""

    def __init__(self, inner: Store, failures: list[int]) -> None:
        self.inner = inner
        self.failures = failures

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def purge(self, *args: Any) -> int:
        if self.failures[0] > 0:
            self.failures[0] -= 1
            raise RuntimeError("purge exploded")
        return self.inner.purge(*args)


def test_two_workers_prune_one_store_at_once_and_survive_a_failing_purge(
    shared_store: Callable[[], Store], caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given two workers on one store, the first purge failing once at the start whichever
    # worker leads the maintenance (the backoff shortened so the test does not wait a second)
    monkeypatch.setattr("rota.worker.retention.FIRST_RETRY_S", 0.05)
    failures = [1]
    first = make_app(FailingPurge(shared_store(), failures), QUICK_RETENTION)
    second = make_app(FailingPurge(shared_store(), failures), QUICK_RETENTION)
    first.jobs["ok"].enqueue_many([()] * 40)
    store = shared_store()
    outcomes = Outcomes()
    first.on_outcome(outcomes)
    second.on_outcome(outcomes)

    async def scenario() -> None:
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(first.serve())
            await stack.enter_async_context(second.serve())
            await outcomes.count(40)
            # When both have had their turns
            await until(lambda: store.count_jobs() == {}, DEADLINE_S)

    with caplog.at_level(logging.WARNING, logger="rota"):
        asyncio.run(scenario())
    # Then every job ran once and was deleted once, and the failure was logged once with
    # its traceback, without stopping the duty
    assert len(outcomes.events) == 40
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "purge exploded" in caplog.text
    assert errors[0].exc_info is not None
    # One failure is counted in the singular
    assert "works again after 1 failed sweep\n" in caplog.text
