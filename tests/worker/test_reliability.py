"""Runtime reliability in one process, on every store: every duty survives any exception,
a claim that raises mid-pass strands nothing, and a lost-lease warning means a lost lease.

Real time with short intervals; tests wait on outcomes or poll a condition with a generous
deadline, never sleep to wait.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import pytest

import rota
from rota.core.jobs import JobRecord, JobState, Lease
from rota.store import open_store
from rota.store.base import LeaseOutcome, Renewal, Store
from tests.waiting import until, wait_until
from tests.worker.conftest import FaultyStore, Outcomes

MakeApp = Callable[..., rota.App]


def errors_logged(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(1 for record in caplog.records
               if record.levelno == logging.ERROR and text in record.getMessage()
               and record.exc_info is not None)


# -- every duty survives any exception -----------------------------------------------------


def test_every_duty_survives_an_unexpected_exception_and_logs_it_once(
    make_worker_app: MakeApp, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a store whose first claim, heartbeat, completion and lease sweep each raise an
    # exception that is not a StoreError (a bug, a driver raising KeyError...)
    first_calls = {"claim", "heartbeat", "complete", "find_expired_leases"}
    faulty: FaultyStore = make_worker_app.faulty_store(  # type: ignore[attr-defined]
        lambda method, n: method in first_calls and n == 0, KeyError)
    app = make_worker_app(faulty)

    @app.job("work")
    def work(n: int) -> None:
        if n == 0:  # hold a lease until the heartbeats have run again after their failure
            assert wait_until(lambda: faulty.calls["heartbeat"] >= 3, 10, poll_s=0.01)

    ids = work.enqueue_many([(n,) for n in range(6)])
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=2, lease_duration=3,
        heartbeat_interval=0.05, poll_interval=0.05))

    async def scenario() -> None:
        async with app.serve():
            await until(lambda: all(
                app.get_job(i).state is JobState.SUCCEEDED for i in ids), 10)  # type: ignore[union-attr]
            # and the sweeper swept again after its failure
            await until(lambda: faulty.calls["find_expired_leases"] >= 3, 10)

    with caplog.at_level(logging.WARNING, logger="rota"):
        asyncio.run(scenario())
    # Then every job succeeded once, each failure was logged once at ERROR with its
    # traceback, and every duty went on
    assert {app.get_job(i).attempt for i in ids} == {1}  # type: ignore[union-attr]
    assert faulty.failures == {name: 1 for name in first_calls}
    assert errors_logged(caplog, "claim from default raised KeyError") == 1
    assert errors_logged(caplog, "group g: heartbeats failed unexpectedly") == 1
    assert errors_logged(caplog, "group g: outcomes failed unexpectedly") == 1
    assert errors_logged(caplog, "lease sweeper failed unexpectedly") == 1


# -- a claim that raises mid-pass ------------------------------------------------------------


def test_a_claim_raising_mid_pass_still_runs_the_jobs_claimed_before_it(
    make_worker_app: MakeApp, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a Weighted group over a and b whose second claim raises something that is not
    # a StoreError, and 60 s leases. (A round of claims is one store call: a has 1 job,
    # so the first round finds it short and the pass's second call is a reflow round that
    # asks b alone.)
    faulty: FaultyStore = make_worker_app.faulty_store(  # type: ignore[attr-defined]
        lambda method, n: method == "claim" and n == 1, RuntimeError)
    app = make_worker_app(faulty)
    ran: list[str] = []

    @app.job("work")
    def work(queue: str) -> None:
        ran.append(queue)

    ids = [work.configure(queue=q).enqueue(q) for q in ("a", "b", "b", "b")]
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Weighted([("a", 1), ("b", 1)]), pool_size=4,
        lease_duration=60, poll_interval=0.05))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(4, timeout_s=10)

    with caplog.at_level(logging.WARNING, logger="rota"):
        run_started = time.monotonic()
        asyncio.run(scenario())
    # Then a's jobs, claimed before the failure, ran at once (not after their 60 s leases
    # expired) in their first attempt, and b's ran in the next pass
    assert time.monotonic() - run_started < 10
    assert sorted(ran) == ["a", "b", "b", "b"]
    assert [app.get_job(i).attempt for i in ids] == [1, 1, 1, 1]  # type: ignore[union-attr]
    assert errors_logged(caplog, "claim from b raised RuntimeError") == 1


def test_an_error_outside_the_claims_hands_the_claimed_jobs_back_at_once(
    store_url: str,
) -> None:
    # Given a group whose planner breaks after its first claim of a pass
    store = open_store(store_url)
    try:
        app = rota.App(store)
        app.job("work")(lambda: None)
        ids = app.jobs["work"].enqueue_many([()] * 3)
        runner = rota.WorkerGroupOptions(name="g", policy=rota.Strict("default"))
        from rota.worker.group import GroupRunner

        group = GroupRunner(runner)
        original = group.dispatcher.begin_pass

        def broken_pass(free: int, **options: Any) -> Any:
            plan = original(free, **options)

            def claimed(request: Any, items: Sequence[Any], **answer: Any) -> None:
                raise ValueError("planner bug")

            plan.claimed = claimed  # type: ignore[method-assign]
            return plan

        group.dispatcher.begin_pass = broken_pass  # type: ignore[method-assign]
        # When a pass claims and then fails
        with pytest.raises(ValueError, match="planner bug"):
            group.claim_pass(store, 3, app.clock.now())
        # Then the claimed jobs are back in their Queue at once, their attempt not counted
        jobs = [store.get_job(i) for i in ids]
        assert [(j.state, j.attempt) for j in jobs if j is not None] == [
            (JobState.SCHEDULED, 0)] * 3
    finally:
        store.close()


# -- a lost-lease warning means a lost lease -------------------------------------------------


class CompleteRacesHeartbeat:
    """Delegates to a real store; `complete` writes, then holds its call open until a
    heartbeat has run after that write: the moment a heartbeat used to misread."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.completed = threading.Event()
        self.beat_after_complete = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def complete(self, leases: Sequence[Lease], now: datetime,
                 results: Sequence[str | None] | None = None) -> int:
        applied = self.inner.complete(leases, now, results)
        self.completed.set()
        self.beat_after_complete.wait(10)
        return applied

    def claim(self, queues: Sequence[str], limit: int, *,
              outcomes: Sequence[LeaseOutcome] = (), **kwargs: Any) -> list[JobRecord]:
        # A pass writes finished jobs' outcomes with its claim: the same race.
        jobs = self.inner.claim(queues, limit, outcomes=outcomes, **kwargs)
        if outcomes:
            self.completed.set()
            self.beat_after_complete.wait(10)
        return jobs

    def heartbeat(self, leases: Sequence[Lease], now: datetime,
                  lease_expires_at: datetime) -> Renewal:
        renewed = self.inner.heartbeat(leases, now, lease_expires_at)
        if self.completed.is_set() and leases:
            self.beat_after_complete.set()
        return renewed


def test_a_heartbeat_during_an_outcome_write_warns_of_no_lost_lease(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a store where a heartbeat runs while a job's `complete` is being written
    store = CompleteRacesHeartbeat(open_store(store_url))
    app = rota.App(store)  # type: ignore[arg-type]

    @app.job("work")
    def work() -> None:
        pass

    job_id = work.enqueue()
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=1, lease_duration=3,
        heartbeat_interval=0.02, poll_interval=0.05))

    async def scenario() -> None:
        async with app.serve():
            await asyncio.to_thread(store.beat_after_complete.wait, 10)

    try:
        with caplog.at_level(logging.WARNING, logger="rota"):
            asyncio.run(scenario())
        # Then the job succeeded, the race did happen, and nobody claimed a lease was lost
        record = app.get_job(job_id)
        assert record is not None and record.state is JobState.SUCCEEDED
        assert store.beat_after_complete.is_set()
        assert [r.getMessage() for r in caplog.records if "lost" in r.getMessage()] == []
    finally:
        app.close()


# -- a row whose arguments cannot be decoded ---------------------------------------------------


def test_a_corrupt_row_is_quarantined_and_its_batch_runs_and_rota_jobs_shows_it(
    durable_store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from rota.cli import main
    from tests.store.test_contract import corrupt_arguments

    # Given five jobs, the third one's stored arguments corrupted with raw SQL
    app = rota.App(durable_store_url)
    ran: list[int] = []

    @app.job("work")
    def work(n: int) -> None:
        ran.append(n)

    ids = work.enqueue_many([(n,) for n in range(5)])
    corrupt_arguments(durable_store_url, ids[2], '{"n": 2}', "{}")
    # Then `rota jobs` shows the row instead of crashing
    assert main(["jobs", "--store", durable_store_url, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [job["id"] for job in listed] == ids
    assert listed[2]["args"] == [] and listed[2]["arguments_error"].startswith(
        "CorruptArguments")
    assert main(["jobs", "--store", durable_store_url]) == 0  # the table renders too
    capsys.readouterr()
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=5, poll_interval=0.05))

    # When a worker drains the Queue (one claim takes all five)
    async def scenario() -> None:
        async with app.serve():
            await until(lambda: all(
                app.get_job(i).state.finished for i in ids), 10)  # type: ignore[union-attr]

    try:
        asyncio.run(scenario())
        # Then the four sound jobs ran once each, and the corrupt one was quarantined
        # with the reason, not run
        assert sorted(ran) == [0, 1, 3, 4]
        states = [app.get_job(i).state for i in ids]  # type: ignore[union-attr]
        assert states == [JobState.SUCCEEDED] * 2 + [JobState.QUARANTINED] + [
            JobState.SUCCEEDED] * 2
        corrupt = app.get_job(ids[2])
        assert corrupt is not None and corrupt.last_error is not None
        assert corrupt.last_error.startswith("CorruptArguments")
        assert main(["queues", "--store", durable_store_url, "--json"]) == 0
        (default,) = json.loads(capsys.readouterr().out)
        assert default["name"] == "default"
        assert (default["counts"]["quarantined"], default["counts"]["succeeded"]) == (1, 4)
    finally:
        app.close()
