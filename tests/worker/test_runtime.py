"""The real-time runtime in one process: capacity, Backpressure, dispatch order, retries,
quarantine, heartbeats, store errors and graceful shutdown, on every store.

Real time with short timeouts; tests wait on events (outcomes, log records), never sleep.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import rota
from rota.core.jobs import JobState
from rota.store import open_store
from rota.store.base import Claimed, LeaseOutcome, Store
from tests.worker.conftest import Outcomes

MakeApp = Callable[..., rota.App]
FAST = {"poll_interval": 0.05}


def run(coroutine: object) -> None:
    asyncio.run(coroutine)  # type: ignore[arg-type]


class LogWaiter(logging.Handler):
    """Sets an event once `count` records of the `rota` logger contain `text`."""

    def __init__(self, text: str, count: int) -> None:
        super().__init__(logging.DEBUG)
        self.text, self.count, self.seen = text, count, 0
        self.reached = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen += 1
            if self.seen >= self.count:
                self.reached.set()


@pytest.fixture
def log_waiter() -> object:
    logger = logging.getLogger("rota")
    handlers: list[LogWaiter] = []
    old_level = logger.level

    def factory(text: str, count: int) -> LogWaiter:
        handler = LogWaiter(text, count)
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        handlers.append(handler)
        return handler

    yield factory
    for handler in handlers:
        logger.removeHandler(handler)
    logger.setLevel(old_level)


# -- capacity and Backpressure ------------------------------------------------------------


def test_pool_fills_to_pool_size_and_never_exceeds_it(make_worker_app: MakeApp) -> None:
    # Given a pool of 4 and 12 sync jobs that hold their Worker until released
    app = make_worker_app()
    lock = threading.Lock()
    active, peak = 0, 0
    full = threading.Event()
    go = threading.Event()

    @app.job("hold")
    def hold() -> None:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
            if active == 4:
                full.set()
        go.wait(10)
        with lock:
            active -= 1

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=4, **FAST))
    hold.enqueue_many([()] * 12)
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            # When the pool fills
            assert await asyncio.to_thread(full.wait, 5)
            # Then exactly pool_size handlers run at once, and the rest wait their turn
            assert peak == 4
            go.set()
            await outcomes.count(12)

    run(scenario())
    assert peak == 4
    assert {e.kind for e in outcomes.events} == {rota.OutcomeKind.SUCCEEDED}


def test_a_full_pool_makes_no_claim(
    make_worker_app: MakeApp, log_waiter: Callable[..., LogWaiter]
) -> None:
    # Given a pool of 2 held by two jobs, with 5 more jobs due
    faulty = make_worker_app.faulty_store(lambda _m, _n: False)  # type: ignore[attr-defined]
    app = make_worker_app(faulty)
    started = threading.Semaphore(0)
    go = threading.Event()

    @app.job("hold")
    def hold() -> None:
        started.release()
        go.wait(10)

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=2, poll_interval=0.02))
    hold.enqueue_many([()] * 7)
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            for _ in range(2):
                assert await asyncio.to_thread(started.acquire, True, 5)
            claims_when_full = faulty.calls["claim"]
            # When several poll intervals pass with the pool full
            waiter = log_waiter("pool full", 5)
            assert await asyncio.to_thread(waiter.reached.wait, 5)
            # Then the group made no claim at all (Backpressure)
            assert faulty.calls["claim"] == claims_when_full
            go.set()
            await outcomes.count(7)

    run(scenario())


# -- dispatch order through the runtime ----------------------------------------------------


def test_weighted_6_3_1_serves_the_nginx_sequence_with_one_worker(make_worker_app: MakeApp) -> None:
    # Given a Weighted 6:3:1 group of one Worker and a backlog in each Queue
    app = make_worker_app()

    @app.job("work")
    def work() -> None:
        pass

    for queue in "abc":
        work.configure(queue=queue).enqueue_many([()] * 10)
    app.add_worker_group(rota.WorkerGroupOptions(
        name="fair", policy=rota.Weighted([("a", 6), ("b", 3), ("c", 1)]), pool_size=1,
        **FAST))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(10)

    run(scenario())
    # Then the first ten served follow the smooth weighted round-robin exactly
    assert "".join(outcomes.queues()[:10]) == "abaabacaba"


def test_strict_serves_the_head_queue_first_through_the_runtime(make_worker_app: MakeApp) -> None:
    # Given a Strict group of one Worker, with bulk work enqueued before critical work
    app = make_worker_app()

    @app.job("work")
    def work() -> None:
        pass

    work.configure(queue="bulk").enqueue_many([()] * 4)
    work.configure(queue="critical").enqueue_many([()] * 4)
    app.add_worker_group(rota.WorkerGroupOptions(
        name="strict", policy=rota.Strict("critical", "bulk"), pool_size=1, **FAST))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(8)

    run(scenario())
    # Then every critical job ran before any bulk job
    assert outcomes.queues() == ["critical"] * 4 + ["bulk"] * 4


def test_an_enqueue_through_the_app_wakes_an_idle_group_at_once(make_worker_app: MakeApp) -> None:
    # Given an idle group polling only every 30 s
    app = make_worker_app()

    @app.job("ping")
    async def ping() -> None:
        pass

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=2, poll_interval=30))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await asyncio.sleep(0)  # let the first (empty) pass run
            # When a job is enqueued through the App
            await ping.enqueue_async()
            # Then it runs long before the next poll
            await outcomes.count(1, timeout_s=2)

    run(scenario())


def tell_claims(app: rota.App) -> threading.Event:
    """An event set once the App's store has answered a claim."""
    claimed = threading.Event()
    claim = app.store.claim

    def claim_and_tell(*args: Any, **kwargs: Any) -> Any:
        try:
            return claim(*args, **kwargs)
        finally:
            claimed.set()

    app.store.claim = claim_and_tell  # type: ignore[method-assign]
    return claimed


def test_a_resume_or_a_requeue_elsewhere_wakes_an_idle_group_at_once(
    durable_store_url: str,
) -> None:
    # Given a group polling every hour, idle after its first pass found its Queue paused,
    # a job waiting in that Queue and a cancelled one
    app, console = rota.App(durable_store_url), rota.App(durable_store_url)

    @app.job("ping")
    async def ping() -> None:
        pass

    waiting, cancelled = ping.enqueue(), ping.enqueue()
    assert app.cancel(cancelled)
    app.pause_queue("default")
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=2, poll_interval=3600))
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    claimed = tell_claims(app)

    async def scenario() -> None:
        async with app.serve():
            assert await asyncio.to_thread(claimed.wait, 10)
            # When another App (another connection, as another process would be)
            # resumes the Queue: no job is added, so only a hint can tell the group
            await asyncio.to_thread(console.resume_queue, "default")
            # Then the waiting job runs long before the next poll
            await outcomes.count(1, timeout_s=5)
            # And so does the cancelled one once the other App requeues it
            assert await asyncio.to_thread(console.requeue, cancelled)
            await outcomes.count(2, timeout_s=5)

    try:
        run(scenario())
    finally:
        console.close()
        app.close()
    assert sorted(event.job_id for event in outcomes.events) == sorted([waiting, cancelled])


@pytest.mark.parametrize("policy", [rota.Strict("tenant-a", "tenant-b"),
                                    rota.Weighted([("tenant-*", 1)])],
                         ids=["named", "family"])
def test_resuming_a_family_wakes_the_idle_groups_serving_its_queues(
    durable_store_url: str, policy: rota.DispatchPolicy,
) -> None:
    # Given a group polling every hour, idle after its first pass found every member of
    # a paused family paused, with a job waiting in each
    app, console = rota.App(durable_store_url), rota.App(durable_store_url)

    @app.job("ping")
    async def ping() -> None:
        pass

    waiting = [ping.configure(queue=queue).enqueue() for queue in ("tenant-a", "tenant-b")]
    app.pause_queue("tenant-*")
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=policy, pool_size=2, poll_interval=3600))
    outcomes = Outcomes()
    app.on_outcome(outcomes)
    claimed = tell_claims(app)

    async def scenario() -> None:
        async with app.serve():
            assert await asyncio.to_thread(claimed.wait, 10)
            await asyncio.sleep(0.2)  # its first passes are over: it idles
            # When another App resumes the family: the hint names "tenant-*"
            await asyncio.to_thread(console.resume_queue, "tenant-*")
            # Then both members' jobs run long before the next poll
            await outcomes.count(2, timeout_s=5)

    try:
        run(scenario())
    finally:
        console.close()
        app.close()
    assert sorted(event.job_id for event in outcomes.events) == sorted(waiting)


# -- retries, dead letter, quarantine ----------------------------------------------------


def test_failures_retry_with_backoff_then_dead_letter(make_worker_app: MakeApp) -> None:
    # Given a job that always fails, with 3 attempts and a 50 ms backoff
    app = make_worker_app()

    @app.job("flaky", retry=rota.RetryPolicy(max_attempts=3, backoff=lambda _a: 0.05))
    def flaky() -> None:
        raise ValueError("boom")

    job_id = flaky.enqueue()
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=2, poll_interval=0.02))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await outcomes.until(
                lambda events: any(e.kind is rota.OutcomeKind.DEAD_LETTERED for e in events))

    run(scenario())
    # Then it was retried twice, each time after the backoff, then dead-lettered
    kinds = [(e.attempt, e.kind) for e in outcomes.events]
    assert kinds == [(1, rota.OutcomeKind.RETRIED), (2, rota.OutcomeKind.RETRIED),
                     (3, rota.OutcomeKind.DEAD_LETTERED)]
    for before, after in zip(outcomes.events, outcomes.events[1:], strict=False):
        assert before.retry_at is not None and after.started_at >= before.retry_at
    record = app.get_job(job_id)
    assert record is not None and record.state is JobState.DEAD_LETTERED
    assert record.last_error == "ValueError: boom" and record.attempt == 3


def test_a_job_with_an_unknown_name_is_quarantined_not_run(make_worker_app: MakeApp) -> None:
    # Given a job enqueued by a producer App whose name the worker App does not know
    producer = make_worker_app()

    @producer.job("ghost")
    def ghost() -> None:
        pass

    job_id = ghost.enqueue()
    worker = make_worker_app()
    worker.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), **FAST))
    outcomes = Outcomes()
    worker.on_outcome(outcomes)

    async def scenario() -> None:
        async with worker.serve():
            await outcomes.count(1)

    run(scenario())
    # Then it is quarantined at once, naming the job, and never retried
    assert [e.kind for e in outcomes.events] == [rota.OutcomeKind.QUARANTINED]
    record = worker.get_job(job_id)
    assert record is not None and record.state is JobState.QUARANTINED
    assert record.last_error is not None and "'ghost'" in record.last_error


# -- leases ---------------------------------------------------------------------------


def test_a_sync_handler_longer_than_its_lease_keeps_it_through_heartbeats(
    make_worker_app: MakeApp,
) -> None:
    # Given a 0.6 s lease renewed every 0.15 s, and a handler that works for 1.5 s
    faulty = make_worker_app.faulty_store(lambda _m, _n: False)  # type: ignore[attr-defined]
    app = make_worker_app(faulty)
    runs: list[int] = []

    @app.job("long")
    def long() -> None:
        runs.append(1)
        time.sleep(1.5)  # the handler's work, not a wait for a condition

    job_id = long.enqueue()
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=2, lease_duration=0.6,
        heartbeat_interval=0.15, **FAST))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(1, timeout_s=5)

    run(scenario())
    # Then its lease never expired: one run, attempt 1, succeeded
    assert runs == [1] and faulty.calls["heartbeat"] >= 4
    record = app.get_job(job_id)
    assert record is not None and (record.state, record.attempt) == (JobState.SUCCEEDED, 1)


@pytest.mark.parametrize("carries_outcomes", [False, True],
                         ids=["outcome writer", "outcomes with claims"])
def test_intermittent_store_errors_lose_no_job(
    make_worker_app: MakeApp, carries_outcomes: bool
) -> None:
    # Given a store where every third claim, completion, heartbeat and sweep fails (and,
    # in the second case, whose claims take outcomes: a failed claim's outcomes are
    # written again, by a later claim or the writer)
    faulty = make_worker_app.faulty_store(  # type: ignore[attr-defined]
        lambda _m, n: n % 3 == 1, carries_outcomes=carries_outcomes)
    app = make_worker_app(faulty)
    executed: list[int] = []

    @app.job("work")
    def work(n: int) -> None:
        executed.append(n)

    ids = work.enqueue_many([(n,) for n in range(60)])
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=4, max_claim_batch=3,
        lease_duration=3, heartbeat_interval=0.05, poll_interval=0.02))
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(60)
        # (leaving serve() flushes the outcome writes still being retried)

    run(scenario())
    # Then every job ran exactly once and succeeded, and the failures did happen
    assert sorted(executed) == list(range(60))
    assert all(app.get_job(i).state is JobState.SUCCEEDED for i in ids)  # type: ignore[union-attr]
    assert faulty.failures["claim"] > 0
    assert carries_outcomes or faulty.failures["complete"] > 0


class CountsCarriedOutcomes:
    """A store that counts the outcomes handed to its claims."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.carried = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def claim(self, queues: Sequence[str], limit: int, *,
              outcomes: Sequence[LeaseOutcome] = (), **kwargs: Any) -> Claimed:
        self.carried += len(outcomes)
        return self.inner.claim(queues, limit, outcomes=outcomes, **kwargs)


def test_outcomes_ride_with_claims_unless_the_store_wants_them_written_beside(
    store_url: str,
) -> None:
    # Given a worker on each store (PostgreSQL sets outcomes_beside_claims), pool 4
    store = CountsCarriedOutcomes(open_store(store_url))
    app = rota.App(store)
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=4, poll_interval=0.05))

    @app.job("work")
    async def work() -> None:
        pass

    ids = work.enqueue_many([()] * 40)
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(40)

    try:
        # When it drains 40 jobs, 4 at a time
        run(scenario())
        # Then every job succeeded, and outcomes went with claims on SQLite and memory,
        # and only through the outcome writer on PostgreSQL
        assert all(app.get_job(i).state is JobState.SUCCEEDED for i in ids)  # type: ignore[union-attr]
        beside = getattr(store.inner, "outcomes_beside_claims", False)
        assert beside == store_url.startswith("postgresql")
        assert (store.carried == 0) == beside
    finally:
        app.close()


class PlainClaimWrapper:
    """Delegates to a real store through a `claim(*args, **kwargs)` whose signature names
    none of the claim's parameters (as a decorator or a proxy would show it)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.carried = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def claim(self, *args: Any, **kwargs: Any) -> Claimed:
        self.carried += len(kwargs.get("outcomes", ()))
        return self.inner.claim(*args, **kwargs)


def test_whether_outcomes_ride_with_claims_is_the_stores_call_not_its_signatures() -> None:
    # Given a worker on a memory store behind a wrapper whose claim shows no `outcomes`
    # (the Store protocol is internal: no store of an older contract to guess at)
    store = PlainClaimWrapper(open_store("memory://"))
    app = rota.App(store)
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=4, poll_interval=0.05))

    @app.job("work")
    async def work() -> None:
        pass

    work.enqueue_many([()] * 40)
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(40)

    try:
        # When it drains 40 jobs, 4 at a time
        run(scenario())
        # Then outcomes went with claims, as the memory store prefers
        assert store.carried > 0
    finally:
        app.close()


# -- graceful shutdown -----------------------------------------------------------------


def test_leaving_serve_lets_running_jobs_finish_and_hands_the_rest_back(
    make_worker_app: MakeApp,
) -> None:
    # Given a pool of 2 running a quick job and a very long one, and 3 jobs still queued
    app = make_worker_app()
    both_running = threading.Barrier(3)

    @app.job("quick")
    def quick() -> None:
        both_running.wait(5)
        time.sleep(0.1)  # finishes well within the grace period

    @app.job("endless")
    def endless() -> None:
        both_running.wait(5)
        time.sleep(30)

    quick_id = quick.enqueue()
    endless_id = endless.enqueue()
    queued = quick.enqueue_many([()] * 3)
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=2, grace_period=0.5, **FAST))

    async def scenario() -> float:
        async with app.serve():
            await asyncio.to_thread(both_running.wait, 5)
            began = time.monotonic()
        return time.monotonic() - began

    # When serve() is left
    took = asyncio.run(scenario())
    # Then the quick job finished, the endless one was handed back at the end of the grace
    # period with its attempt not counted, and the queued ones were never claimed
    assert 0.4 < took < 2.0
    states = {i: app.get_job(i) for i in [quick_id, endless_id, *queued]}
    assert states[quick_id].state is JobState.SUCCEEDED  # type: ignore[union-attr]
    assert (states[endless_id].state, states[endless_id].attempt) == (  # type: ignore[union-attr]
        JobState.SCHEDULED, 0)
    for i in queued:
        assert (states[i].state, states[i].attempt) == (JobState.SCHEDULED, 0)  # type: ignore[union-attr]


# -- start-up ----------------------------------------------------------------------------


@pytest.mark.parametrize(("policy", "message"), [
    (rota.Weighted([("a", 0)]), "Weighted dispatch needs at least one queue, all weights >= 1."),
    (rota.Weighted([]), "Weighted dispatch needs at least one queue, all weights >= 1."),
    (rota.Strict(), "Strict dispatch needs at least one queue."),
])
def test_an_invalid_policy_fails_as_the_group_starts(
    policy: rota.DispatchPolicy, message: str
) -> None:
    # Given an App whose group has an invalid policy (accepted at construction)
    app = rota.App("memory://")
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=policy))

    async def scenario() -> None:
        async with app.serve():
            pytest.fail("serve() should not start")

    # When it starts, Then the exact ValueError is raised
    with pytest.raises(ValueError) as raised:
        asyncio.run(scenario())
    assert str(raised.value) == message
    with pytest.raises(ValueError) as raised:
        app.run()
    assert str(raised.value) == message
    app.close()


def test_a_group_runs_in_one_drive_at_a_time() -> None:
    # Given an App serving its group
    app = rota.App("memory://")
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("q")))

    async def scenario() -> None:
        async with app.serve():
            # When the same group is served again, or drained inline, in the meantime
            with pytest.raises(RuntimeError, match="already running in this App"):
                async with app.serve():
                    pytest.fail("a second serve() must not start")
            with pytest.raises(RuntimeError, match="already running in this App"):
                await app.run_until_idle_async()
        # Then once the first drive has stopped, the group may run again
        assert await app.run_until_idle_async() == 0

    asyncio.run(scenario())
    with pytest.raises(ValueError, match="selects no Worker Group"):
        asyncio.run(app.serve(groups=[]).__aenter__())
    app.close()


@pytest.mark.parametrize("raised", [ValueError("bad row"), SystemExit(3)],
                         ids=["exception", "system-exit"])
def test_a_failed_attempt_is_stored_and_logged_with_its_traceback(
    make_worker_app: MakeApp, caplog: pytest.LogCaptureFixture, raised: BaseException
) -> None:
    # Given an async handler that raises (an Exception, or SystemExit: still a failure)
    app = make_worker_app()

    @app.job("load", retry=rota.RetryPolicy(max_attempts=1))
    async def load() -> None:
        raise raised

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=1, **FAST))
    job_id = load.enqueue()
    outcomes = Outcomes()
    app.on_outcome(outcomes)

    async def scenario() -> None:
        async with app.serve():
            await outcomes.count(1)

    # When a worker runs it
    with caplog.at_level(logging.WARNING, logger="rota"):
        run(scenario())
    # Then its dead letter holds the traceback, and the one log line of the failure
    # carries the exception
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.DEAD_LETTERED
    assert job.last_traceback is not None and ", in load\n" in job.last_traceback
    failed = [r for r in caplog.records if f"job {job_id} (load) attempt 1 failed" in
              r.getMessage()]
    assert len(failed) == 1 and failed[0].exc_info is not None
    assert failed[0].exc_info[1] is raised
