"""The worker registry inside a real-time runtime, on every store: a serving App registers,
refreshes with its heartbeats (served counters, jobs in flight), records the per-minute
history, and removes its row at a graceful stop. Waits on store conditions, never sleeps
for a fixed time, asserts no duration."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from datetime import timedelta as timedelta
from typing import Any

import pytest

import rota
from rota.core.workers import in_flight_owners
from rota.store import Store, open_store
from rota.store.base import StoreError
from rota.worker.registry import RegistryDuty
from tests.waiting import until
from tests.worker.conftest import FaultyStore

DEADLINE_S = 20.0  # generous: a loaded machine, every store


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()


def make_app(store: Store) -> tuple[rota.App, asyncio.Event]:
    app = rota.App(store, retention=None)
    release = asyncio.Event()

    @app.job("work")
    def work() -> None:
        pass

    @app.job("fail", retry=rota.RetryPolicy(max_attempts=1))
    def fail() -> None:
        raise RuntimeError("no")

    @app.job("hold")
    async def hold() -> None:
        await release.wait()

    app.add_worker_group(rota.WorkerGroupOptions(
        name="fair", policy=rota.Weighted([("a", 2), ("b", 1)]), pool_size=4,
        poll_interval=0.05, lease_duration=1, heartbeat_interval=0.1))
    return app, release


def served_by(app: rota.App) -> dict[tuple[str, str], int]:
    totals: dict[tuple[str, str], int] = {}
    for count in app.served():
        key = (count.queue, count.outcome)
        totals[key] = totals.get(key, 0) + count.count
    return totals


def test_a_serving_app_registers_refreshes_and_leaves(store: Store) -> None:
    app, release = make_app(store)
    app.jobs["work"].configure(queue="a").enqueue_many([()] * 6)
    app.jobs["fail"].configure(queue="b").enqueue_many([()] * 2)
    app.jobs["hold"].configure(queue="b").enqueue()

    async def scenario() -> None:
        async with app.serve():
            # Then the worker shows up, alive, with its group and policy
            await until(lambda: len(app.workers()) == 1, DEADLINE_S)
            [worker] = app.workers()
            assert worker.alive and worker.groups[0].policy == rota.Weighted([("a", 2),
                                                                              ("b", 1)])
            assert worker.groups[0].owner.startswith("fair@")
            # And its refreshes carry the served counters and the job in flight
            await until(lambda: app.workers()[0].in_flight == 1 and sum(
                c.count for c in app.workers()[0].served) == 8, DEADLINE_S)
            assert {(c.queue, c.outcome): c.count for c in app.workers()[0].served} == {
                ("a", "succeeded"): 6, ("b", "dead_lettered"): 2}
            # And what it runs now is read from the leases its group's owner id holds
            [running] = store.jobs_in_flight(in_flight_owners(app.workers()))
            assert (running.name, running.queue, running.lease_owner) == (
                "hold", "b", worker.groups[0].owner)
            release.set()
        # And at a graceful stop the row is gone, the history holds every attempt
        assert app.workers() == []
        assert served_by(app) == {("a", "succeeded"): 6, ("b", "dead_lettered"): 2,
                                  ("b", "succeeded"): 1}
        [view] = app.fairness()
        assert [(q.queue, q.target_share, q.served) for q in view.queues] == [
            ("a", 2 / 3, 6), ("b", 1 / 3, 3)]

    asyncio.run(scenario())
    app.close()


def test_a_short_life_still_leaves_its_history(store: Store) -> None:
    # Given a runtime stopped right after it served its jobs, maybe before any refresh
    app, _ = make_app(store)
    app.jobs["work"].configure(queue="a").enqueue_many([()] * 3)

    async def scenario() -> None:
        async with app.serve():
            await until(lambda: sum(
                n for (_, state), n in app.store.count_jobs().items()
                if state is rota.JobState.SUCCEEDED) == 3, DEADLINE_S)

    asyncio.run(scenario())
    assert served_by(app) == {("a", "succeeded"): 3}
    assert app.workers() == []
    app.close()


def test_registry_failures_never_stop_the_worker(store: Store) -> None:
    # Given a store whose registry writes fail the first few times
    class FlakyRegistry(FaultyStore):
        def register_worker(self, *args: object, **kwargs: object) -> None:
            self.calls["register_worker"] += 1
            if self.calls["register_worker"] <= 2:
                raise StoreError("injected register failure")
            self.inner.register_worker(*args, **kwargs)  # type: ignore[arg-type]

    flaky = FlakyRegistry(store)
    app, _ = make_app(flaky)  # type: ignore[arg-type]
    app.jobs["work"].configure(queue="a").enqueue_many([()] * 3)

    async def scenario() -> None:
        async with app.serve():
            # Then jobs are served meanwhile and the worker registers in the end
            await until(lambda: len(app.workers()) == 1, DEADLINE_S)
            await until(lambda: sum(c.count for c in app.workers()[0].served) == 3, DEADLINE_S)

    asyncio.run(scenario())
    assert served_by(app) == {("a", "succeeded"): 3}
    app.close()


def test_a_starting_worker_removes_rows_dead_for_over_an_hour(store: Store) -> None:
    # Given two rows left by killed workers: one dead for two hours, one for a minute
    from datetime import UTC, datetime, timedelta

    from rota.core.workers import WorkerInfo

    now = datetime.now(UTC)
    for worker_id, dead_for in (("old:1:x", timedelta(hours=2)),
                                ("recent:2:y", timedelta(minutes=1))):
        store.register_worker(WorkerInfo(
            id=worker_id, host="h", pid=1, version="0", started_at=now - dead_for,
            last_seen=now - dead_for, dead_at=now - dead_for), now - dead_for)
    app, _ = make_app(store)

    async def scenario() -> None:
        async with app.serve():
            # Then the new worker's registration cleans up only the long-dead one
            await until(lambda: len([w for w in app.workers() if w.alive]) == 1, DEADLINE_S)
            await until(lambda: "old:1:x" not in {w.id for w in app.workers()}, DEADLINE_S)
            assert "recent:2:y" in {w.id for w in app.workers()}

    asyncio.run(scenario())
    app.close()


def test_a_new_worker_reports_its_first_work_at_once_not_a_heartbeat_later(
        store: Store) -> None:
    # Given a group whose heartbeat interval (and so the registry's refresh) is 30 s,
    # longer than this test may wait
    app = rota.App(store, retention=None)
    release = asyncio.Event()

    @app.job("work")
    def work() -> None:
        pass

    @app.job("hold")
    async def hold() -> None:
        await release.wait()

    app.add_worker_group(rota.WorkerGroupOptions(
        name="slow-heartbeat", policy=rota.Strict("a"), pool_size=4, poll_interval=0.05,
        lease_duration=90, heartbeat_interval=30))
    app.jobs["work"].configure(queue="a").enqueue_many([()] * 3)
    app.jobs["hold"].configure(queue="a").enqueue()

    async def scenario() -> None:
        async with app.serve():
            # When it starts on them, then its row shows jobs in flight and its first
            # outcomes, long before its first heartbeat interval is over
            await until(lambda: bool(app.workers()) and app.workers()[0].in_flight >= 1
                        and sum(c.count for c in app.workers()[0].served) >= 1, DEADLINE_S)
            [worker] = app.workers()
            # And it counts as dead once two refreshes in a row are missed (2.5 intervals)
            assert worker.dead_at - worker.last_seen == timedelta(seconds=75)
            assert abs(worker.clock_offset) < timedelta(seconds=1)
            release.set()

    asyncio.run(scenario())
    app.close()


class _Group:
    """What the registry duty reads of a group loop."""

    def __init__(self) -> None:
        self.name = "fair"
        self.options = rota.WorkerGroupOptions(name="fair", policy=rota.Strict("a"),
                                               heartbeat_interval=0.1)
        self.in_flight = 0
        self.served = {("a", "succeeded"): 3}
        self.runner = type("Runner", (), {"owner": "fair@host:1:tok"})()


class _Runtime:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.clock = rota.VirtualClock()
        self.groups = [_Group()]
        self.stopping = False

    async def store_call(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(call, *args, **kwargs)


def test_a_refresh_in_flight_at_the_stop_is_not_counted_twice(store: Store) -> None:
    """The duty is cancelled while its refresh, carrying 3 new outcomes, is in flight;
    that refresh still lands, and the last refresh at the stop must not add them again."""
    entered, gate = threading.Event(), threading.Event()

    class Held:
        def __init__(self, inner: Store) -> None:
            self.inner = inner

        def refresh_worker(self, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("new") and not gate.is_set():
                entered.set()
                gate.wait(DEADLINE_S)
            return self.inner.refresh_worker(*args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    runtime = _Runtime(Held(store))  # type: ignore[arg-type]
    duty = RegistryDuty(runtime.store)

    async def scenario() -> None:
        task = asyncio.create_task(duty(runtime))  # type: ignore[arg-type]
        await asyncio.to_thread(entered.wait, DEADLINE_S)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        gate.set()  # the refresh lands after its duty was cancelled
        await duty.at_stop(runtime)  # type: ignore[arg-type]

    asyncio.run(scenario())
    since = runtime.clock.now() - timedelta(hours=1)
    assert sum(count.count for count in store.served_counts(since)) == 3
