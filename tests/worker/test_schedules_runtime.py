"""The schedule duty inside a real-time worker (`app.serve`), on every store.

Real time with `every=1` second; tests wait on outcomes with generous deadlines, never
sleep for a fixed time and never assert a duration.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

import rota
from rota.core.jobs import JobState
from rota.store.base import StoreError
from rota.worker.schedules import ScheduleDuty
from tests.worker.conftest import Outcomes

pytestmark = pytest.mark.slow


def ticking_app(app: rota.App, poll_interval: float = 30.0) -> Outcomes:
    """`app` with a job "tick" scheduled every second, served by a group that polls only
    every `poll_interval` seconds; returns its outcome recorder."""
    app.job("tick")(lambda: None)
    app.schedule("tick", "tick", every=1)
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=2, poll_interval=poll_interval))
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    return outcomes


def test_a_worker_fires_every_instant_without_waiting_for_its_poll(
    make_worker_app: Callable[..., rota.App],
) -> None:
    # Given a worker whose group polls every 30 s, and a schedule every second
    app = make_worker_app()
    outcomes = ticking_app(app, poll_interval=30.0)

    # When it runs until three ticks have run
    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(3, timeout_s=30)

    asyncio.run(scenario())
    # Then each ran as its own instant: whole seconds, no instant twice, due at the
    # instant (the run starts at or after it)
    jobs = [app.get_job(event.job_id) for event in outcomes.events]
    due = [job.due_at for job in jobs if job is not None]
    assert len(set(due)) == len(due) >= 3
    assert all(at.microsecond == 0 for at in due)
    assert all(event.started_at >= job.due_at  # type: ignore[union-attr]
               for event, job in zip(outcomes.events, jobs, strict=True))


class FailingFires:
    """Delegates to a real store; the first `failures` fire_schedule calls raise
    StoreError before reaching it."""

    def __init__(self, inner: Any, failures: int) -> None:
        self.inner = inner
        self.left = failures
        self.failed = 0
        self._lock = threading.Lock()

    def fire_schedule(self, *args: Any) -> Any:
        with self._lock:
            failing = self.left > 0
            self.left -= failing
            self.failed += failing
        if failing:
            raise StoreError("injected fire_schedule failure")
        return self.inner.fire_schedule(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_the_duty_survives_store_errors_and_fires_once_per_instant(store_url: str) -> None:
    # Given a store whose first three fires fail
    from rota.store import open_store

    inner = open_store(store_url)
    store = FailingFires(inner, failures=3)
    app = rota.App(store)  # type: ignore[arg-type]
    try:
        outcomes = ticking_app(app)

        # When a worker runs until two ticks ran
        async def scenario() -> None:
            async with app.serve():
                await outcomes.count(2, timeout_s=30)

        asyncio.run(scenario())
        # Then the failures were retried, and no instant fired twice
        assert store.failed == 3
        due = [app.get_job(e.job_id).due_at for e in outcomes.events]  # type: ignore[union-attr]
        assert len(set(due)) == len(due)
        assert all(job.state is JobState.SUCCEEDED or job.state is JobState.SCHEDULED
                   for job in inner.list_jobs(limit=100))
    finally:
        app.close()


def test_the_duty_sleeps_until_the_next_instant() -> None:
    # Given a duty over a schedule every hour, at a virtual 00:59:30
    from datetime import UTC, datetime

    from rota.core.schedules import EveryRule, Schedule
    from rota.store.memory import MemoryStore

    clock = rota.VirtualClock(datetime(2026, 1, 1, 0, 59, 30, tzinfo=UTC))
    store = MemoryStore()
    duty = ScheduleDuty([Schedule("h", EveryRule(timedelta(hours=1)), "job", "default")],
                        store, clock)

    async def call(function: Callable[..., Any], *args: Any) -> Any:
        return function(*args)

    hints: list[str] = []

    def step() -> float:
        return asyncio.run(duty.step(call, hints.append))

    # When it takes its first step: it registers, nothing is due, 30 s to the next instant
    assert step() == 30.0
    # and at 01:00:00 it fires, then has an hour to wait
    clock.advance(30)
    assert step() == 3600.0
    assert hints == ["default"] and duty.fired == 1
    # and when another process fired an instant first, it moves on without firing
    clock.advance(3600)
    store.fire_schedule("h", duty.schedules[0].definition,
                        duty.schedules[0].new_job(clock.now()), clock.now())
    assert step() == 3600.0
    assert duty.fired == 1 and len(store.list_jobs()) == 2


def test_a_duty_whose_definition_was_superseded_warns_once_and_does_not_fire(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given an old worker's duty and a newer one (other arguments) on one store
    from datetime import UTC, datetime

    from rota.core.schedules import EveryRule, Schedule
    from rota.store.memory import MemoryStore

    clock = rota.VirtualClock(datetime(2026, 1, 1, tzinfo=UTC))
    store = MemoryStore()
    rule = EveryRule(timedelta(minutes=1))
    old = ScheduleDuty([Schedule("s", rule, "job", "default", '["v1"]')], store, clock)
    new = ScheduleDuty([Schedule("s", rule, "job", "default", '["v2"]')], store, clock)

    async def call(function: Callable[..., Any], *args: Any) -> Any:
        return function(*args)

    def step(duty: ScheduleDuty) -> None:
        asyncio.run(duty.step(call, lambda _queue: None))

    step(old)
    clock.advance(30)
    step(new)  # registers the new definition
    # When both look at each of three instants, the old one first
    for _ in range(3):
        clock.advance(60)
        step(old)
        step(new)
    # Then only the new definition fired, and the old one warned once
    assert (old.fired, new.fired) == (0, 3)
    assert [job.args for job in store.list_jobs()] == [("v2",)] * 3
    warnings = [r for r in caplog.records if "another App's definition" in r.getMessage()]
    assert len(warnings) == 1


def test_a_fire_that_commits_while_the_duty_is_cancelled_is_still_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a duty whose store calls run on a thread, and a fire that blocks in the store
    from datetime import UTC, datetime

    from rota.core.schedules import EveryRule, Schedule
    from rota.store.memory import MemoryStore

    clock = rota.VirtualClock(datetime(2026, 1, 1, 0, 59, 30, tzinfo=UTC))
    store = MemoryStore()
    duty = ScheduleDuty([Schedule("h", EveryRule(timedelta(hours=1)), "job", "default")],
                        store, clock)
    entered, release = threading.Event(), threading.Event()
    fire = store.fire_schedule

    def slow_fire(*args: Any) -> Any:
        entered.set()
        release.wait(10)
        return fire(*args)

    store.fire_schedule = slow_fire  # type: ignore[method-assign]

    async def call(function: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(function, *args)

    async def stop_while_firing() -> None:
        assert await duty.step(call, lambda _queue: None) == 30.0  # registers, none due
        clock.advance(30)
        step = asyncio.ensure_future(duty.step(call, lambda _queue: None))
        await asyncio.to_thread(entered.wait, 10)
        # When the worker stops (the duty is cancelled) while the fire is in the store
        step.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await step

    caplog.set_level("INFO", logger="rota")
    asyncio.run(stop_while_firing())  # waits for the fire's thread before returning
    # Then the fire that the store committed was logged all the same
    (job,) = store.list_jobs()
    fired = [r.getMessage() for r in caplog.records if "fired job" in r.getMessage()]
    assert fired == [f"schedule 'h' fired job {job.id} for 2026-01-01T01:00:00+00:00"]


def test_a_running_worker_fires_a_schedule_stored_after_it_started(
    make_worker_app: Callable[..., rota.App],
) -> None:
    # Given a running worker whose App defines a job "tick" but no schedule, polling every
    # 0.2 s
    app = make_worker_app()
    app.job("tick")(lambda: None)
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=2, poll_interval=0.2))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            # When a schedule every second is stored (no restart)
            app.set_schedule("tick", "tick", every=1)
            await outcomes.count(2, timeout_s=30)
            # and then paused: no fire after the pause is seen
            app.pause_schedule("tick")

    asyncio.run(scenario())
    # Then the worker fired it, one job per instant
    due = [app.get_job(e.job_id).due_at for e in outcomes.events]  # type: ignore[union-attr]
    assert len(set(due)) == len(due) >= 2
    (info,) = app.list_schedules()
    assert info.stored and info.paused and info.next_fire_at is None


def test_the_duty_follows_stored_schedules_step_by_step(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a duty with no schedule in code, in an App that defines the job "report", and
    # a stored schedule every hour set at 00:00 (virtual time)
    from datetime import UTC, datetime

    clock = rota.VirtualClock(datetime(2026, 1, 1, tzinfo=UTC))
    app = rota.App("memory://", clock=clock)
    app.job("report")(lambda kind: None)
    app.set_schedule("hourly", "report", every=3600, args=("v1",))
    duty = app._schedules.duty(app.store, clock)
    assert duty is not None

    async def call(function: Callable[..., Any], *args: Any) -> Any:
        return function(*args)

    hints: list[str] = []

    def step() -> float:
        return asyncio.run(duty.step(call, hints.append))

    def jobs() -> list[tuple[object, ...]]:
        return [(job.args, job.due_at.hour) for job in app.store.list_jobs()]

    try:
        # When it steps before and at 01:00, it fires once, for 01:00
        assert step() == 3600.0
        clock.advance(3600)
        assert step() == 3600.0
        assert jobs() == [(("v1",), 1)] and hints == ["default"]
        # When the schedule is replaced (another interval and arguments) at 01:30
        clock.advance(1800)
        app.set_schedule("hourly", "report", every=7200, args=("v2",))
        assert step() == 1800.0  # 02:00 is an instant of both rules
        clock.advance(1800)
        step()
        assert jobs()[-1] == (("v2",), 2)
        # When it is paused over 04:00 and resumed at 04:30
        app.pause_schedule("hourly")
        assert step() == float("inf")
        clock.advance(9000)
        step()
        app.resume_schedule("hourly")
        assert step() == 5400.0  # to 06:00: 04:00 was skipped
        clock.advance(5400)
        step()
        assert jobs() == [(("v1",), 1), (("v2",), 2), (("v2",), 6)]
        # When it is removed, nothing fires at 08:00
        app.remove_schedule("hourly")
        clock.advance(7200)
        assert step() == float("inf")
        assert len(jobs()) == 3
    finally:
        app.close()


def test_a_fire_refused_because_the_row_changed_is_tried_again_with_the_new_row() -> None:
    # Given a duty about to fire a stored schedule at 01:00, whose row is replaced by
    # another definition between the duty's read and its fire
    from datetime import UTC, datetime

    clock = rota.VirtualClock(datetime(2026, 1, 1, tzinfo=UTC))
    app = rota.App("memory://", clock=clock)
    app.job("report")(lambda kind: None)
    app.set_schedule("hourly", "report", every=3600, args=("v1",))
    duty = app._schedules.duty(app.store, clock)
    assert duty is not None
    store = app.store
    fire = store.fire_schedule  # type: ignore[attr-defined]
    replaced: list[bool] = []

    def replace_then_fire(*args: Any) -> Any:
        if not replaced:
            replaced.append(True)
            app.set_schedule("hourly", "report", every=3600, args=("v2",))
        return fire(*args)

    store.fire_schedule = replace_then_fire  # type: ignore[attr-defined]

    async def call(function: Callable[..., Any], *args: Any) -> Any:
        return function(*args)

    try:
        asyncio.run(duty.step(call, lambda _queue: None))
        clock.advance(3600)
        # When it steps at 01:00: the old definition's fire is refused
        asyncio.run(duty.step(call, lambda _queue: None))
        assert store.list_jobs() == []
        # Then the next step fires 01:00 with the new row
        asyncio.run(duty.step(call, lambda _queue: None))
        assert [job.args for job in store.list_jobs()] == [("v2",)]
    finally:
        app.close()
