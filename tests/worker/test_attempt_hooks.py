"""Attempt hooks (rota.worker.hooks): one hook, written once, sees the same events under
both drives, `run_until_idle` and the real-time runtime."""

from __future__ import annotations

import asyncio
import contextvars
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime

import pytest

import rota
from rota.core.jobs import JobRecord
from rota.core.outcomes import Outcome
from rota.worker.hooks import AttemptHook
from rota.worker.outcome_names import OUTCOME_NAMES

DRIVES = ["inline", "realtime"]
# What a hook sets before an attempt, read by the handler.
SEEN_BY_HANDLER: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="")


class Recorder(AttemptHook):
    """Records every event per job id; `done` is set once `expected` outcomes were seen."""

    def __init__(self, name: str, log: list[str], expected: int) -> None:
        self.name = name
        self.log = log  # shared by the hooks of a test: their order
        self.by_job: dict[int, list[str]] = defaultdict(list)
        self.expected = expected
        self.done = asyncio.Event()

    def before_attempt(self, job: JobRecord, group: str) -> object:
        self.by_job[job.id].append(f"before {group}")
        self.log.append(f"{self.name} before")
        # Reset in after_attempt, as a hook that sets a context variable must.
        return job.id, SEEN_BY_HANDLER.set(SEEN_BY_HANDLER.get() + self.name)

    def after_attempt(self, job: JobRecord, group: str, token: object,
                      outcome: Outcome | None) -> None:
        assert isinstance(token, tuple) and token[0] == job.id
        SEEN_BY_HANDLER.reset(token[1])
        name = "none" if outcome is None else OUTCOME_NAMES[type(outcome)]
        self.by_job[job.id].append(f"after {name}")
        self.log.append(f"{self.name} after")

    def on_outcome(self, job: JobRecord, group: str, outcome: Outcome,
                   started_at: datetime, finished_at: datetime) -> None:
        assert started_at <= finished_at
        self.by_job[job.id].append(f"outcome {OUTCOME_NAMES[type(outcome)]}")
        self.log.append(f"{self.name} outcome")
        if sum(1 for events in self.by_job.values() for e in events
               if e.startswith("outcome")) >= self.expected:
            self.done.set()


def make(app: rota.App, hooks: list[Recorder], pool_size: int = 20) -> dict[str, str]:
    """Two handlers (async, sync) that note what the hooks set in their context."""
    seen: dict[str, str] = {}

    @app.job("async_job")
    async def async_job(n: int) -> None:
        seen[f"async {n}"] = SEEN_BY_HANDLER.get()
        if n < 0:
            raise ValueError("negative")

    @app.job("sync_job")
    def sync_job(n: int) -> None:
        seen[f"sync {n}"] = SEEN_BY_HANDLER.get()

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), poll_interval=0.05, pool_size=pool_size,
        retry=rota.RetryPolicy(max_attempts=1)))
    for hook in hooks:
        app._hook_attempts(hook)
    return seen


def drive(app: rota.App, mode: str, hook: Recorder) -> None:
    if mode == "inline":
        app.run_until_idle()
        return

    async def scenario() -> None:
        async with app.serve():
            await hook.done.wait()

    asyncio.run(asyncio.wait_for(scenario(), 30))


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
@pytest.mark.parametrize("mode", DRIVES)
def test_a_hook_sees_the_same_events_in_both_drives(
    mode: str, make_app: Callable[[], rota.App]
) -> None:
    # Given two hooks on an App with a job that succeeds, one that fails, a sync one
    app = make_app()
    log: list[str] = []
    first, second = Recorder("A", log, 3), Recorder("B", log, 3)
    seen = make(app, [first, second])
    ok = app.jobs["async_job"].enqueue(1)
    failing = app.jobs["async_job"].enqueue(-1)
    sync = app.jobs["sync_job"].enqueue(2)
    # When a drive runs them
    drive(app, mode, second)
    # Then each hook saw, per attempt: before, after with the outcome, the outcome
    expected = {
        ok: ["before g", "after succeeded", "outcome succeeded"],
        failing: ["before g", "after dead_lettered", "outcome dead_lettered"],
        sync: ["before g", "after succeeded", "outcome succeeded"],
    }
    assert dict(first.by_job) == expected
    assert dict(second.by_job) == expected
    # And the hooks nest: befores in order, afters in reverse, outcomes in order
    assert log[:6] == ["A before", "B before", "B after", "A after", "A outcome",
                       "B outcome"]
    # And the handlers ran in the context the befores set, sync handlers included
    assert seen == {"async 1": "AB", "async -1": "AB", "sync 2": "AB"}


@pytest.mark.parametrize("store_kind", ["memory"])
def test_a_drive_without_hooks_builds_none(make_app: Callable[[], rota.App]) -> None:
    """No tracing, no observer, no callback: the runtime's path without hooks."""
    app = make_app()
    make(app, [])

    async def scenario() -> tuple[object, ...]:
        async with app.serve() as runtime:
            return runtime.attempt_hooks

    assert asyncio.run(asyncio.wait_for(scenario(), 30)) == ()


class Raising(AttemptHook):
    """A hook broken at every moment."""

    def before_attempt(self, job: JobRecord, group: str) -> object:
        raise RuntimeError("before")

    def after_attempt(self, job: JobRecord, group: str, token: object,
                      outcome: Outcome | None) -> None:
        raise AssertionError("never called: its before raised")

    def on_outcome(self, job: JobRecord, group: str, outcome: Outcome,
                   started_at: datetime, finished_at: datetime) -> None:
        raise RuntimeError("on_outcome")


@pytest.mark.parametrize("store_kind", ["memory"])
@pytest.mark.parametrize("mode", DRIVES)
def test_a_hook_that_raises_is_logged_and_the_jobs_run_on(
    mode: str, make_app: Callable[[], rota.App], caplog: pytest.LogCaptureFixture
) -> None:
    # Given a broken hook before a working one, on a group of one Worker
    app = make_app()
    log: list[str] = []
    recorder = Recorder("A", log, 2)
    seen = make(app, [], pool_size=1)
    app._hook_attempts(Raising())
    app._hook_attempts(recorder)
    first, second = app.jobs["async_job"].enqueue(1), app.jobs["sync_job"].enqueue(2)
    # When a drive runs two jobs
    drive(app, mode, recorder)
    # Then both ran (the one Worker was freed after the first) and the other hook saw both
    assert seen == {"async 1": "A", "sync 2": "A"}
    assert set(recorder.by_job) == {first, second}
    assert all(events[-1] == "outcome succeeded" for events in recorder.by_job.values())
    # And the broken hook was logged, before and on the outcome, each time
    raised = [r.getMessage() for r in caplog.records if "attempt hook" in r.getMessage()]
    assert len(raised) == 4 and all("ignored" in message for message in raised)
