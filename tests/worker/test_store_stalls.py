"""The worker when the store stops answering: every store call has a deadline, a lease
that cannot be renewed in time is treated as lost, a claim answered too late is handed
back, an outcome fenced off never disturbs a newer attempt of the same job, and the
incident is logged once.

Real time on the memory and SQLite stores, behind `StallingStore`, whose calls can be
made to hang on a `threading.Event` (as on a connection that stopped answering) or to run
a hook first. Tests wait on events or poll a condition under a generous deadline; they
never sleep to wait.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import rota
import rota.worker.deadlines
from rota.core.jobs import JobState
from rota.store import open_store
from rota.store.base import Store, StoreError
from tests.waiting import until, wait_until
from tests.worker.conftest import Outcomes

NO_BACKOFF = rota.RetryPolicy(max_attempts=5, backoff=lambda _attempt: 0)


class StallingStore:
    """Delegates to a real store. `hang(method)` makes every later call of `method` block
    until `heal()`, then raise StoreError (its connection was dropped meanwhile), as a
    connection that stopped answering does; while `down` is set, every call raises
    StoreError at once (counted in `failures`); `hook(method, fn)` runs `fn(result)` after
    each call of `method` on the store thread. Counts calls per method, and `hung` counts
    the calls that started hanging.

    Its `claim` takes no `outcomes`, so every outcome goes through the outcome writer."""

    outcomes_beside_claims = True

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        self.hung: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.down = threading.Event()
        self._hanging: set[str] = set()
        self._healed = threading.Event()
        self._hooks: dict[str, Callable[[Any], None]] = {}
        self._lock = threading.Lock()

    def hang(self, method: str) -> None:
        with self._lock:
            self._hanging.add(method)
            self._healed.clear()

    def heal(self) -> None:
        with self._lock:
            self._hanging.clear()
        self._healed.set()

    def hook(self, method: str, fn: Callable[[Any], None]) -> None:
        self._hooks[method] = fn

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if not callable(target) or name.startswith("_"):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls[name] += 1
                hanging = name in self._hanging
                if hanging:
                    self.hung[name] += 1
                failing = self.down.is_set()
                if failing:
                    self.failures[name] += 1
            if failing:
                raise StoreError(f"{name}: the store is down")
            if hanging:
                # Bounded, so that a test that fails never leaves a thread behind.
                self._healed.wait(30)
                raise StoreError(f"{name}: connection dropped while it hung")
            result = target(*args, **kwargs)
            hook = self._hooks.get(name)
            if hook is not None:
                hook(result)
            return result

        return call


@pytest.fixture(params=["memory", "sqlite"])
def inner_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'rota.db'}"
    store = open_store(url)
    yield store
    store.close()


def warnings_with(caplog: pytest.LogCaptureFixture, text: str,
                  level: int = logging.WARNING) -> int:
    return sum(1 for record in caplog.records
               if record.levelno == level and text in record.getMessage())


# -- a heartbeat that hangs ----------------------------------------------------------------


def test_a_hanging_heartbeat_loses_the_lease_before_its_end_and_the_worker_recovers(
    inner_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a 1 s lease renewed every 0.25 s, a sync job that works until it is told to
    # stop, and a store whose heartbeats hang from the start (new connections still
    # pass: claims, sweeps and outcome writes answer)
    store = StallingStore(inner_store)
    app = rota.App(store)  # type: ignore[arg-type]
    seen: dict[str, Any] = {}
    claims_at_failure: list[int] = []

    @app.job("long")
    def long() -> str:
        current = rota.current_job()
        if current.attempt > 1:
            return "second"
        record = app.get_job(current.id)
        assert record is not None and record.lease_expires_at is not None
        seen["lease_end"] = record.lease_expires_at
        # The first renewal given up: the worker knows its renewal is failing.
        assert wait_until(lambda: store.hung["heartbeat"] >= 2, 10, poll_s=0.005)
        claims_at_failure.append(store.calls["claim"])
        assert wait_until(lambda: current.cancel_requested, 10, poll_s=0.005)
        seen["cancel_seen_at"] = app.clock.now()
        seen["claims_while_failing"] = store.calls["claim"] - claims_at_failure[0]
        return "first"

    store.hang("heartbeat")
    job_id = long.enqueue()
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=2, lease_duration=1,
        heartbeat_interval=0.25, poll_interval=0.02, retry=NO_BACKOFF))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            # When the handler was told its lease is lost, the store heals
            await until(lambda: "cancel_seen_at" in seen, 10, off_loop=False)
            store.heal()
            await outcomes.count(1, timeout_s=10)

    with caplog.at_level(logging.DEBUG, logger="rota"):
        asyncio.run(scenario())
    # Then the worker gave the lease up before its end and the handler saw
    # cancel_requested, and the group claimed nothing while the renewal was failing
    given_up = [datetime.fromtimestamp(r.created, UTC) for r in caplog.records
                if "not renewed in time" in r.getMessage()]
    assert len(given_up) == 1 and given_up[0] < seen["lease_end"]
    assert "cancel_seen_at" in seen
    assert seen["claims_while_failing"] == 0
    # and attempt 1's outcome was never written (neither "first" nor cancelled): the job
    # came back through the lease sweeper, attempt charged, and attempt 2 succeeded
    # without a restart
    record = app.get_job(job_id)
    assert record is not None
    assert (record.state, record.attempt, record.result) == (JobState.SUCCEEDED, 2, "second")
    assert [(e.attempt, e.kind.value) for e in outcomes.events] == [(2, "succeeded")]
    # and the incident was logged once, its recovery once
    assert warnings_with(caplog, "no new claims until it answers") == 1
    assert warnings_with(caplog, "store answers again") == 1


def test_an_async_handler_whose_lease_cannot_be_renewed_is_cancelled_not_recorded(
    inner_store: Store,
) -> None:
    # Given an async job that waits forever, and heartbeats that hang
    store = StallingStore(inner_store)
    app = rota.App(store)  # type: ignore[arg-type]
    stopped = asyncio.Event()
    attempts: list[int] = []

    @app.job("wait")
    async def wait() -> None:
        attempts.append(rota.current_job().attempt)
        if rota.current_job().attempt > 1:
            return
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    store.hang("heartbeat")
    job_id = wait.enqueue()
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), lease_duration=1,
        heartbeat_interval=0.25, poll_interval=0.02, retry=NO_BACKOFF))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            # When its lease cannot be renewed in time, the handler's task is cancelled
            await asyncio.wait_for(stopped.wait(), 10)
            store.heal()
            await outcomes.count(1, timeout_s=10)

    asyncio.run(scenario())
    # Then its attempt was not recorded as cancelled: it ran again and succeeded
    record = app.get_job(job_id)
    assert record is not None and (record.state, record.attempt) == (JobState.SUCCEEDED, 2)
    assert attempts == [1, 2]
    assert [(e.attempt, e.kind.value) for e in outcomes.events] == [(2, "succeeded")]


# -- a claim answered late ---------------------------------------------------------------


def test_a_claim_answered_after_most_of_its_lease_is_released_not_started(
    inner_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a 10 s lease renewed every 2 s, and a store whose first claim that finds a job
    # answers after 9 s by the App's clock (less than one heartbeat interval left)
    clock = rota.VirtualClock()
    store = StallingStore(inner_store)
    app = rota.App(store, clock=clock)  # type: ignore[arg-type]
    ran: list[int] = []

    @app.job("work")
    def work() -> None:
        ran.append(rota.current_job().attempt)

    late = {"done": False}

    def answered_late(claimed: Any) -> None:
        if claimed and not late["done"]:
            late["done"] = True
            clock.advance(9)

    store.hook("claim", answered_late)
    job_id = work.enqueue()
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), lease_duration=10, heartbeat_interval=2,
        poll_interval=0.02))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(1, timeout_s=10)

    with caplog.at_level(logging.WARNING, logger="rota"):
        asyncio.run(scenario())
    # Then the late claim's job was handed back unstarted, its attempt not counted, and
    # the next claim ran it once
    assert late["done"] and store.calls["release"] >= 1
    assert ran == [1]
    record = app.get_job(job_id)
    assert record is not None and (record.state, record.attempt) == (JobState.SUCCEEDED, 1)
    assert warnings_with(caplog, "answered too late") == 1


# -- a fenced outcome beside a newer attempt -------------------------------------------


def test_a_fenced_outcome_never_drops_a_newer_attempt_of_the_same_job(
    inner_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a pool of 2 and a job whose attempt 1 is taken over (its lease ended by a
    # sweep) while it runs, so that the same worker claims attempt 2 beside it
    store = StallingStore(inner_store)
    app = rota.App(store)  # type: ignore[arg-type]
    second_started = threading.Event()
    second_may_end = threading.Event()
    attempts: list[int] = []

    @app.job("work")
    def work() -> str:
        current = rota.current_job()
        attempts.append(current.attempt)
        if current.attempt == 1:
            record = inner_store.get_job(current.id)
            assert record is not None and record.lease_expires_at is not None
            # as a sweep at the lease's end would, the job due again at once
            assert inner_store.expire_lease(record.lease, record.lease_expires_at,
                                            app.clock.now(), "taken over by a sweep")
            assert second_started.wait(10)
            return "first"
        second_started.set()
        assert second_may_end.wait(20)
        return "second"

    job_id = work.enqueue()
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=2, lease_duration=1,
        heartbeat_interval=0.1, poll_interval=0.02, retry=NO_BACKOFF))
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    renewed_after_fence: list[bool] = []

    def fenced() -> bool:
        return any("lost the lease before the outcome" in r.getMessage()
                   for r in caplog.records)

    def lease_end() -> Any:
        record = inner_store.get_job(job_id)
        return None if record is None else record.lease_expires_at

    async def scenario() -> None:
        async with app.serve():
            # When attempt 1's outcome is fenced off while attempt 2 runs
            await until(fenced, 10, off_loop=False)
            before = lease_end()
            # attempt 2's lease is still renewed
            renewed_after_fence.append(await asyncio.to_thread(
                wait_until, lambda: (lease_end() or before) > before, 5, poll_s=0.01))
            second_may_end.set()
            await outcomes.count(2, timeout_s=10)

    with caplog.at_level(logging.WARNING, logger="rota"):
        asyncio.run(scenario())
    # Then attempt 2 kept its lease and its outcome was written: two runs, not three
    assert renewed_after_fence == [True]
    assert attempts == [1, 2]
    record = app.get_job(job_id)
    assert record is not None
    assert (record.state, record.attempt, record.result) == (JobState.SUCCEEDED, 2, "second")


# -- a store that cannot be reached --------------------------------------------------------


def test_a_worker_that_cannot_reach_the_store_claims_nothing_and_resumes_by_itself(
    inner_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a worker whose every store call fails while the store is down
    store = StallingStore(inner_store)
    down = store.down
    app = rota.App(store)  # type: ignore[arg-type]
    ran: list[int] = []

    @app.job("work")
    def work() -> None:
        ran.append(rota.current_job().attempt)

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), lease_duration=1, heartbeat_interval=0.1,
        poll_interval=0.02))
    producer = rota.App(inner_store)
    producer.job("work")(lambda: None)
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    claims_while_down: list[int] = []

    async def calls_failed(more: int) -> None:
        # Whatever keeps probing the store (the sweeper, the leader election, the
        # registry): the worker goes on trying it without claiming.
        target = sum(store.failures.values()) + more
        await until(lambda: sum(store.failures.values()) >= target, 10, off_loop=False)

    async def scenario() -> None:
        async with app.serve():
            # When the store goes down and a job is enqueued meanwhile
            down.set()
            await until(lambda: warnings_with(caplog, "no new claims") == 1, 10,
                        off_loop=False)
            await calls_failed(2)  # a pass under way when it went down is over by then
            producer.jobs["work"].enqueue()  # another process, which reaches the store
            failed_before = store.failures["claim"]
            await calls_failed(3)
            claims_while_down.append(store.failures["claim"] - failed_before)
            # and comes back
            down.clear()
            await outcomes.count(1, timeout_s=10)
            # (the incident ends when every kind of call has answered again, which may be
            # a little after the first claim: a duty's next try comes on its own cadence)
            await until(lambda: warnings_with(caplog, "store answers again") == 1, 10,
                        off_loop=False)

    with caplog.at_level(logging.WARNING, logger="rota"):
        asyncio.run(scenario())
    # Then no claim was tried while the worker knew it down, the job ran once when it came
    # back, without a restart, and the outage was logged once, its end once
    assert claims_while_down == [0]
    assert ran == [1]
    assert warnings_with(caplog, "no new claims until it answers") == 1
    assert warnings_with(caplog, "store answers again") == 1


# -- a claim that hangs --------------------------------------------------------------------


def test_a_hanging_claim_is_given_up_and_no_second_pass_runs_beside_it(
    inner_store: Store, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given claims bounded by 0.75 s (lease 1 s, interval 0.25 s; no 5 s floor here), a
    # job waiting, and a store whose claims hang
    monkeypatch.setattr(rota.worker.deadlines, "CALL_DEADLINE_FLOOR_S", 0.2)
    store = StallingStore(inner_store)
    app = rota.App(store)  # type: ignore[arg-type]
    ran: list[int] = []

    @app.job("work")
    def work() -> None:
        ran.append(rota.current_job().attempt)

    job_id = work.enqueue()
    store.hang("claim")
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), lease_duration=1, heartbeat_interval=0.25,
        poll_interval=0.02))
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    hung: list[int] = []

    async def scenario() -> None:
        async with app.serve():
            # When the first claim is given up on at its deadline's backstop
            await until(lambda: warnings_with(caplog, "no new claims") == 1, 10,
                        off_loop=False)
            sweeps = store.calls["find_expired_leases"]
            await until(lambda: store.calls["find_expired_leases"] >= sweeps + 3, 10,
                        off_loop=False)
            hung.append(store.hung["claim"])
            # and the store heals
            store.heal()
            await outcomes.count(1, timeout_s=10)

    with caplog.at_level(logging.WARNING, logger="rota"):
        asyncio.run(scenario())
    # Then no second claim ran beside the stuck one, though sweeps answered meanwhile,
    # and once it returned the group claimed again by itself and ran the job once
    assert hung == [1]
    assert ran == [1]
    record = app.get_job(job_id)
    assert record is not None and (record.state, record.attempt) == (JobState.SUCCEEDED, 1)
    assert warnings_with(caplog, "store answers again") == 1


def test_a_worker_that_does_not_lead_the_maintenance_resumes_by_itself_too(
    inner_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a leader that runs the store's maintenance (sweeps included) and serves
    # another Queue, and a second worker behind a store that goes down
    leader = rota.App(inner_store)
    leader.job("work")(lambda: None)
    leader.add_worker_group(rota.WorkerGroupOptions(
        name="other", policy=rota.Strict("elsewhere"), lease_duration=1,
        heartbeat_interval=0.1, poll_interval=0.02))
    store = StallingStore(inner_store)
    follower = rota.App(store)  # type: ignore[arg-type]
    ran: list[int] = []

    @follower.job("work")
    def work() -> None:
        ran.append(rota.current_job().attempt)

    follower.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), lease_duration=1, heartbeat_interval=0.1,
        poll_interval=0.02))
    outcomes = Outcomes()
    follower.on_outcome(outcomes)

    async def scenario() -> None:
        async with leader.serve() as leading:
            election = leading.election
            assert election is not None
            await until(lambda: election.leading, 10, off_loop=False)
            async with follower.serve():
                # When the follower's store goes down (it holds no job: no renewal
                # probes it), then comes back, and a job is enqueued for it
                store.down.set()
                await until(lambda: warnings_with(caplog, "no new claims") == 1, 10,
                            off_loop=False)
                store.down.clear()
                leader.jobs["work"].enqueue()
                # Then it claims and runs the job by itself
                await outcomes.count(1, timeout_s=10)

    with caplog.at_level(logging.WARNING, logger="rota"):
        asyncio.run(scenario())
    assert ran == [1]
    assert warnings_with(caplog, "store answers again") == 1
