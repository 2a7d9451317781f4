"""The job lifecycle in the real-time runtime, on every store: cancel requests delivered
by heartbeats to async and sync handlers, timeouts of async and sync handlers (a sync one
keeps its Worker occupied until its thread returns), results and current_job on Worker
threads.

Real time with short intervals; tests wait on events and outcomes, never sleep.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import timedelta

import rota
from rota.core.jobs import CANCELLED_ON_REQUEST, JobState
from tests.worker.conftest import Outcomes
from tests.worker.test_runtime import LogWaiter, log_waiter, run  # noqa: F401 (fixture)

MakeApp = Callable[..., rota.App]
# Heartbeats every 50 ms deliver cancel requests quickly; the lease stays long.
QUICK = {"poll_interval": 0.05, "heartbeat_interval": 0.05, "lease_duration": 10}


def group(pool_size: int = 4, **options: object) -> rota.WorkerGroupOptions:
    return rota.WorkerGroupOptions(  # type: ignore[arg-type]
        name="g", policy=rota.Strict("default"), pool_size=pool_size,
        **{**QUICK, **options},
    )


def kinds(outcomes: Outcomes) -> list[rota.OutcomeKind]:
    return [event.kind for event in outcomes.events]


def stored(app: rota.App, job_id: int) -> rota.JobRecord:
    job = app.get_job(job_id)
    assert job is not None
    return job


# -- cancel ----------------------------------------------------------------------------


def test_cancel_of_a_running_async_handler_cancels_its_task(make_worker_app: MakeApp) -> None:
    # Given an async handler that waits forever
    app = make_worker_app()
    started = asyncio.Event()
    was_cancelled = False

    @app.job("forever")
    async def forever() -> None:
        nonlocal was_cancelled
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            was_cancelled = True
            raise

    app.add_worker_group(group(retry=rota.RetryPolicy(max_attempts=5)))
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    job_id = forever.enqueue()

    async def scenario() -> None:
        async with app.serve():
            await asyncio.wait_for(started.wait(), 10)
            # When its cancel is requested
            assert await asyncio.to_thread(app.cancel, job_id)
            # Then the next heartbeat delivers it and the job ends cancelled
            await outcomes.count(1)

    run(scenario())
    assert was_cancelled
    assert kinds(outcomes) == [rota.OutcomeKind.CANCELLED]
    job = stored(app, job_id)
    assert (job.state, job.last_error, job.attempt) == (
        JobState.CANCELLED, CANCELLED_ON_REQUEST, 1)


def test_cancel_of_a_running_sync_handler_turns_cancel_requested_true(
    make_worker_app: MakeApp,
) -> None:
    # Given a sync handler that works until its cancel is requested
    app = make_worker_app()
    started = threading.Event()
    seen: list[tuple[int, bool]] = []

    @app.job("cooperative")
    def cooperative() -> str:
        job = rota.current_job()  # visible on the Worker thread
        seen.append((job.id, job.cancel_requested))
        started.set()
        stop = threading.Event()
        for _ in range(1000):  # polls its flag, as a long sync handler should (10 s at most)
            if job.cancel_requested:
                break
            stop.wait(0.01)
        seen.append((job.id, job.cancel_requested))
        return "partial work"

    app.add_worker_group(group())
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    job_id = cooperative.enqueue()

    async def scenario() -> None:
        async with app.serve():
            assert await asyncio.to_thread(started.wait, 10)
            assert await asyncio.to_thread(app.cancel, job_id)
            await outcomes.count(1)

    run(scenario())
    # Then the handler saw the flag turn True, returned, and the job ended cancelled
    assert seen == [(job_id, False), (job_id, True)]
    assert kinds(outcomes) == [rota.OutcomeKind.CANCELLED]
    job = stored(app, job_id)
    assert (job.state, job.last_error, job.result) == (
        JobState.CANCELLED, CANCELLED_ON_REQUEST, None)


def test_a_cancel_reaches_a_running_handler_long_before_the_next_heartbeat(
    make_worker_app: MakeApp,
) -> None:
    # Given a sync handler running under a group whose heartbeat comes every 60 s
    app = make_worker_app()
    started = threading.Event()
    seen: list[bool] = []

    @app.job("cooperative")
    def cooperative() -> None:
        job = rota.current_job()
        started.set()
        stop = threading.Event()
        for _ in range(3000):  # 30 s at most: half the heartbeat interval
            if job.cancel_requested:
                break
            stop.wait(0.01)
        seen.append(job.cancel_requested)

    app.add_worker_group(group(heartbeat_interval=60, lease_duration=180))
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    job_id = cooperative.enqueue()

    async def scenario() -> None:
        async with app.serve():
            assert await asyncio.to_thread(started.wait, 10)
            # When its cancel is requested
            assert await asyncio.to_thread(app.cancel, job_id)
            await outcomes.count(1)

    run(scenario())
    # Then it saw the request (within about a second, by the cancel check) and stopped
    assert seen == [True]
    assert stored(app, job_id).state is JobState.CANCELLED


# -- timeouts --------------------------------------------------------------------------


def test_an_async_handler_past_its_timeout_is_cancelled_and_fails(
    make_worker_app: MakeApp,
) -> None:
    app = make_worker_app()
    was_cancelled = False

    @app.job("hang", timeout=0.1)
    async def hang() -> None:
        nonlocal was_cancelled
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            was_cancelled = True
            raise

    app.add_worker_group(group(retry=rota.RetryPolicy(max_attempts=1)))
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    job_id = hang.enqueue()

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(1)

    run(scenario())
    assert was_cancelled
    assert kinds(outcomes) == [rota.OutcomeKind.DEAD_LETTERED]
    job = stored(app, job_id)
    assert job.state is JobState.DEAD_LETTERED
    assert job.last_error == "TimeoutError: job 'hang' ran longer than its timeout of 0.1 s"


def test_a_sync_handler_past_its_timeout_fails_at_once_and_keeps_its_worker(
    make_worker_app: MakeApp, log_waiter: Callable[..., LogWaiter],  # noqa: F811
) -> None:
    # Given a pool of one Worker, a sync job that hangs past its 0.1 s timeout and a
    # second job waiting behind it
    faulty = make_worker_app.faulty_store(lambda _m, _n: False)  # type: ignore[attr-defined]
    app = make_worker_app(faulty)
    release = threading.Event()
    returned = threading.Event()

    @app.job("hang", timeout=0.1)
    def hang() -> None:
        release.wait(10)
        returned.set()

    @app.job("next")
    def next_job() -> str:
        return "ran"

    app.add_worker_group(group(pool_size=1, poll_interval=0.02,
                               retry=rota.RetryPolicy(max_attempts=1)))
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    hung = hang.enqueue()
    waiting = next_job.enqueue()

    async def scenario() -> None:
        async with app.serve():
            # When the timeout passes: the attempt is recorded as failed at once
            await outcomes.count(1)
            failed = await asyncio.to_thread(stored, app, hung)
            assert not returned.is_set()
            # (the outcome writer may still be writing it: wait for the record)
            for _ in range(500):
                if failed.state is JobState.DEAD_LETTERED:
                    break
                await asyncio.sleep(0.01)
                failed = await asyncio.to_thread(stored, app, hung)
            assert failed.state is JobState.DEAD_LETTERED
            # Then its Worker stays occupied: passes find the pool full and claim nothing
            claims = faulty.calls["claim"]
            waiter = log_waiter("pool full", 5)
            assert await asyncio.to_thread(waiter.reached.wait, 5)
            assert faulty.calls["claim"] == claims
            assert (await asyncio.to_thread(stored, app, waiting)).state is JobState.SCHEDULED
            # And once the thread returns, the Worker serves the next job
            release.set()
            await outcomes.count(2)

    run(scenario())
    assert returned.is_set()
    assert kinds(outcomes) == [rota.OutcomeKind.DEAD_LETTERED, rota.OutcomeKind.SUCCEEDED]
    job = stored(app, hung)
    assert job.last_error == "TimeoutError: job 'hang' ran longer than its timeout of 0.1 s"
    assert stored(app, waiting).result == "ran"


# -- results -------------------------------------------------------------------------


def test_results_of_sync_and_async_handlers_are_stored(make_worker_app: MakeApp) -> None:
    app = make_worker_app()

    @app.job("sync")
    def sync_handler(n: int) -> dict[str, int]:
        return {"n": n, "job": rota.current_job().id}

    @app.job("async")
    async def async_handler(n: int) -> list[int]:
        return [n, rota.current_job().attempt]

    @app.job("none")
    def none_handler() -> None:
        pass

    app.add_worker_group(group())
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    a, b, c = sync_handler.enqueue(1), async_handler.enqueue(2), none_handler.enqueue()

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(3)

    run(scenario())  # leaving serve() flushes every outcome
    assert stored(app, a).result == {"n": 1, "job": a}
    assert stored(app, b).result == [2, 1]
    assert stored(app, c).result is None and stored(app, c).state is JobState.SUCCEEDED
    assert all(stored(app, i).started_at is not None for i in (a, b, c))


def test_a_bulk_cancel_reaches_running_handlers_that_read_their_meta(
    make_worker_app: MakeApp,
) -> None:
    # Given two sync handlers of tenant acme running, each reading its meta, and a job of
    # another tenant due later
    app = make_worker_app()
    running = threading.Semaphore(0)
    seen: list[dict[str, object]] = []

    @app.job("cooperative")
    def cooperative() -> None:
        job = rota.current_job()
        seen.append(job.meta)
        running.release()
        stop = threading.Event()
        for _ in range(1000):  # polls its flag (10 s at most)
            if job.cancel_requested:
                return
            stop.wait(0.01)

    app.add_worker_group(group())
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    acme = cooperative.configure(meta={"tenant": "acme"}).enqueue_many([(), ()])
    later = cooperative.configure(meta={"tenant": "zeta"}, delay=3600).enqueue()

    async def scenario() -> None:
        async with app.serve():
            for _ in acme:
                assert await asyncio.to_thread(running.acquire, True, 10)
            # When every acme job is cancelled in one call
            assert await asyncio.to_thread(app.cancel_jobs, meta={"tenant": "acme"}) == 2
            await outcomes.count(2)

    run(scenario())
    # Then both handlers saw their meta and their cancel request; the other tenant's job
    # is untouched
    assert seen == [{"tenant": "acme"}] * 2
    assert kinds(outcomes) == [rota.OutcomeKind.CANCELLED] * 2
    assert {stored(app, i).state for i in acme} == {JobState.CANCELLED}
    assert stored(app, later).state is JobState.SCHEDULED


# -- snooze and expiry -------------------------------------------------------------------


def test_the_runtime_snoozes_and_reports_expired_jobs_without_running_them(
    make_worker_app: MakeApp,
) -> None:
    # Given a job that snoozes once, and one whose expiry passed before any worker ran
    app = make_worker_app()
    runs: list[str] = []

    @app.job("note")
    def note(what: str) -> None:
        runs.append(what)
        if what == "snoozer" and len(runs) == 1:
            raise rota.Snooze(0, reason="not yet")

    app.add_worker_group(group())
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    snoozer = note.enqueue("snoozer")
    expired = note.configure(expires=app.clock.now() - timedelta(seconds=1)).enqueue("late")

    async def scenario() -> None:
        async with app.serve() as runtime:
            # When the worker serves them
            await outcomes.count(3)
        # Then the expired one never ran, and every outcome was reported and counted (the
        # stop wrote what was left)
        served = {key: count for loop in runtime.groups for key, count in loop.served.items()}
        assert served == {("default", "snoozed"): 1, ("default", "succeeded"): 1,
                          ("default", "expired"): 1}

    run(scenario())
    assert runs == ["snoozer", "snoozer"]
    assert sorted(kinds(outcomes), key=lambda kind: kind.value) == [
        rota.OutcomeKind.EXPIRED, rota.OutcomeKind.SNOOZED, rota.OutcomeKind.SUCCEEDED]
    job = stored(app, snoozer)
    assert (job.state, job.attempt, job.snoozes) == (JobState.SUCCEEDED, 1, 1)
    job = stored(app, expired)
    assert job.state is JobState.CANCELLED
    assert job.last_error is not None and job.last_error.startswith("Expired: not started by")
