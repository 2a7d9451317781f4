"""`App.run_until_idle()`, the deterministic drive, on every store kind."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest

import rota
from rota import JobState, RetryPolicy, Strict, Weighted, WorkerGroupOptions
from rota.core.jobs import NewJob
from tests.app.conftest import Recorder

MakeApp = Callable[[], rota.App]
MakeRecorder = Callable[[rota.App], Recorder]


def group(name: str, policy: rota.DispatchPolicy, **options: object) -> WorkerGroupOptions:
    return WorkerGroupOptions(name=name, policy=policy, **options)  # type: ignore[arg-type]


def test_groups_run_in_registration_order_pass_after_pass(
    make_app: MakeApp, make_recorder: MakeRecorder
) -> None:
    # Given two groups of pool 2 on disjoint Queues, 4 jobs each
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("first", Strict("x"), pool_size=2))
    app.add_worker_group(group("second", Strict("y"), pool_size=2))
    recorder.enqueue("y", 4)
    recorder.enqueue("x", 4)
    # When the App runs until idle
    executions = app.run_until_idle()
    # Then each round runs one pass of each group, in registration order
    assert recorder.log == ["x", "x", "y", "y", "x", "x", "y", "y"]
    # And it returns the number of executions
    assert executions == 8
    assert app.run_until_idle() == 0


def test_it_never_advances_the_clock(
    make_app: MakeApp, make_recorder: MakeRecorder, clock: rota.VirtualClock
) -> None:
    # Given a job due now and one due in 10 s
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("g", Strict("q")))
    before = clock.now()
    recorder.enqueue("q")
    later = recorder.job.configure(queue="q", delay=10).enqueue("later")
    # When run until idle / Then only the due job ran and the clock did not move
    assert app.run_until_idle() == 1
    assert clock.now() == before
    assert recorder.log == ["q"]
    # And once the clock is moved by the test, the later job runs
    clock.advance(10)
    assert app.run_until_idle() == 1
    record = app.get_job(later)
    assert record is not None and record.state is JobState.SUCCEEDED


def test_sync_and_async_handlers_both_run(make_app: MakeApp) -> None:
    app = make_app()
    ran: list[str] = []

    @app.job("sync", queue="q")
    def sync_job(tag: str) -> None:
        ran.append(tag)

    @app.job("async", queue="q")
    async def async_job(tag: str) -> None:
        await asyncio.sleep(0)
        ran.append(tag)

    app.add_worker_group(group("g", Strict("q")))
    ids = [sync_job.enqueue("s"), async_job.enqueue("a")]
    assert app.run_until_idle() == 2
    assert ran == ["s", "a"]
    assert all(app.get_job(i).state is JobState.SUCCEEDED for i in ids)  # type: ignore[union-attr]


def test_run_until_idle_async_from_a_running_loop(make_app: MakeApp) -> None:
    app = make_app()
    app.job("noop", queue="q")(lambda: None)
    app.add_worker_group(group("g", Strict("q")))
    app.jobs["noop"].enqueue()

    async def main() -> int:
        with pytest.raises(RuntimeError, match="run_until_idle_async"):
            app.run_until_idle()
        return await app.run_until_idle_async()

    assert asyncio.run(main()) == 1


# -- retries, dead letter, quarantine -------------------------------------------------------


def test_failures_retry_with_backoff_then_dead_letter(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given a job that always fails and a group allowing 3 attempts (default backoff)
    app = make_app()
    calls: list[int] = []

    @app.job("flaky", queue="q")
    def flaky() -> None:
        calls.append(1)
        raise ValueError("boom")

    app.add_worker_group(group("g", Strict("q"), retry=RetryPolicy(max_attempts=3)))
    job_id = flaky.enqueue()
    start = clock.now()
    # When run until idle / Then one attempt, rescheduled 2 s later, error recorded
    assert app.run_until_idle() == 1
    record = app.get_job(job_id)
    assert record is not None
    assert (record.state, record.attempt, record.due_at, record.last_error) == (
        JobState.SCHEDULED, 1, start + timedelta(seconds=2), "ValueError: boom")
    # And it is not retried before its due time
    clock.advance(1)
    assert app.run_until_idle() == 0
    clock.advance(1)
    assert app.run_until_idle() == 1
    record = app.get_job(job_id)
    assert record is not None and record.due_at == clock.now() + timedelta(seconds=4)
    # When the third attempt fails / Then the job is dead-lettered
    clock.advance(4)
    assert app.run_until_idle() == 1
    record = app.get_job(job_id)
    assert record is not None
    assert (record.state, record.attempt, record.last_error) == (
        JobState.DEAD_LETTERED, 3, "ValueError: boom")
    clock.advance(3600)
    assert app.run_until_idle() == 0
    assert len(calls) == 3


def test_the_default_group_retry_is_ten_attempts(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    app = make_app()

    @app.job("always-fails", queue="q")
    def always_fails() -> None:
        raise KeyError("k")

    app.add_worker_group(group("g", Strict("q")))
    job_id = always_fails.enqueue()
    total = 0
    for _ in range(20):
        total += app.run_until_idle()
        clock.advance(timedelta(minutes=5))
    record = app.get_job(job_id)
    assert record is not None and record.state is JobState.DEAD_LETTERED
    assert total == 10 and record.last_error == "KeyError: 'k'"


def test_a_job_level_retry_overrides_the_groups(make_app: MakeApp) -> None:
    # Given a group allowing 5 attempts and a job allowing only 1
    app = make_app()

    @app.job("strict-retry", queue="q", retry=RetryPolicy(max_attempts=1))
    def fails() -> None:
        raise RuntimeError("nope")

    app.add_worker_group(group("g", Strict("q"), retry=RetryPolicy(max_attempts=5)))
    job_id = fails.enqueue()
    # When run / Then it is dead-lettered after its single attempt
    assert app.run_until_idle() == 1
    record = app.get_job(job_id)
    assert record is not None and record.state is JobState.DEAD_LETTERED
    assert record.last_error == "RuntimeError: nope"


def test_a_job_level_backoff_of_zero_retries_within_the_same_call(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("fast-retry", queue="q", retry=RetryPolicy(max_attempts=4, backoff=lambda n: 0))
    def fails() -> None:
        raise OSError("again")

    app.add_worker_group(group("g", Strict("q")))
    job_id = fails.enqueue()
    assert app.run_until_idle() == 4
    record = app.get_job(job_id)
    assert record is not None and record.state is JobState.DEAD_LETTERED


def test_an_unknown_job_name_is_quarantined_at_once(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given a job whose name no handler in this App has (enqueued by another program)
    app = make_app()
    app.add_worker_group(group("g", Strict("q")))
    (job_id,) = app.store.enqueue(
        [NewJob(name="billing.charge_card", queue="q", due_at=clock.now())], clock.now())
    # When run / Then it is quarantined after one claim, not retried, error names it
    assert app.run_until_idle() == 1
    record = app.get_job(job_id)
    assert record is not None and record.state is JobState.QUARANTINED
    assert record.attempt == 1
    assert record.last_error is not None and "'billing.charge_card'" in record.last_error
    clock.advance(3600)
    assert app.run_until_idle() == 0


# -- validation when the group starts -----------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (Weighted([]), r"^Weighted dispatch needs at least one queue, all weights >= 1\.$"),
        (Weighted([("q", 1), ("r", 0)]),
         r"^Weighted dispatch needs at least one queue, all weights >= 1\.$"),
        (Strict(), r"^Strict dispatch needs at least one queue\.$"),
        (Strict("q", "q"), "'q'"),
    ],
    ids=["weighted-empty", "weighted-zero", "strict-empty", "duplicate"],
)
def test_policy_errors_surface_when_run_until_idle_starts_the_group(
    make_app: MakeApp, make_recorder: MakeRecorder, policy: rota.DispatchPolicy, message: str
) -> None:
    # Given an invalid policy: constructing the options and adding the group succeed
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("bad", policy))
    recorder.enqueue("q")
    # When the group starts / Then the ValueError, and nothing ran
    with pytest.raises(ValueError, match=message):
        app.run_until_idle()
    assert recorder.log == []


def test_dispatch_state_persists_across_calls(
    make_app: MakeApp, make_recorder: MakeRecorder
) -> None:
    # Given 2:1 over a and b with one Worker, and a first call serving one job of each
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("g", Weighted([("a", 2), ("b", 1)]), pool_size=1))
    recorder.enqueue("a")
    recorder.enqueue("b")
    assert app.run_until_idle() == 2
    # When both Queues get one job in a second call
    recorder.enqueue("a")
    recorder.enqueue("b")
    app.run_until_idle()
    # Then b goes first: a paid for its win in the first call and b kept the credit it
    # gained there (with fresh credits a would go first again)
    assert recorder.log == ["a", "b", "b", "a"]


def test_a_broken_backoff_retries_on_the_default_schedule_and_says_so(
    make_app: Callable[[], rota.App], clock: rota.VirtualClock
) -> None:
    # Given a job whose RetryPolicy's backoff returns a negative delay, then raises
    app = make_app()
    calls: list[int] = []

    def broken_backoff(attempt: int) -> float:
        calls.append(attempt)
        if attempt == 1:
            return -1
        raise RuntimeError("no backoff today")

    @app.job("fails", retry=rota.RetryPolicy(max_attempts=3, backoff=broken_backoff))
    def fails() -> None:
        raise ValueError("v")

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("default")))
    job_id = fails.enqueue()
    # When it fails
    assert app.run_until_idle() == 1
    # Then it is retried 2 s later (the default), the reason in last_error
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.SCHEDULED
    assert job.due_at == clock.now() + timedelta(seconds=2)
    assert job.last_error is not None and "ValueError: v" in job.last_error
    assert "backoff failed: ValueError: backoff(attempt) must be zero or more" in job.last_error
    clock.advance(2)
    assert app.run_until_idle() == 1
    job = app.get_job(job_id)
    assert job is not None and "RuntimeError: no backoff today" in (job.last_error or "")
    # And it still dead-letters after max_attempts
    clock.advance(4)
    assert app.run_until_idle() == 1
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.DEAD_LETTERED
    assert calls == [1, 2]


def test_a_handler_raising_systemexit_hands_the_rest_of_the_pass_back(
    make_app: Callable[[], rota.App],
) -> None:
    # Given three jobs claimed in one pass, the second of which exits the interpreter
    app = make_app()
    ran: list[int] = []

    @app.job("step")
    def step(n: int) -> None:
        ran.append(n)
        if n == 2:
            raise SystemExit(3)

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("default")))
    ids = step.enqueue_many([(1,), (2,), (3,)])
    # When the drive runs, SystemExit gets out
    with pytest.raises(SystemExit):
        app.run_until_idle()
    # Then the job that exited and the one after it are back on the Queue, attempt 0
    states = [app.get_job(i) for i in ids]
    assert [s.state if s else None for s in states] == [
        JobState.SUCCEEDED, JobState.SCHEDULED, JobState.SCHEDULED]
    assert [s.attempt if s else None for s in states] == [1, 0, 0]
    assert ran == [1, 2]


def test_an_invalid_policy_names_its_worker_group_in_its_cause() -> None:
    # Given two groups, the second with a weight of 0
    app = rota.App("memory://")
    app.add_worker_group(rota.WorkerGroupOptions(name="ok", policy=rota.Strict("x")))
    app.add_worker_group(rota.WorkerGroupOptions(
        name="fair", policy=rota.Weighted([("a", 1), ("b", 0)])))
    # When the groups start
    with pytest.raises(ValueError) as raised:
        app.run_until_idle()
    app.close()
    # Then the message is exact and its cause says which group, Queue and weight
    assert str(raised.value) == "Weighted dispatch needs at least one queue, all weights >= 1."
    assert str(raised.value.__cause__) == (
        "Queue 'b' has weight 0 (weights must be whole numbers >= 1), in Worker Group "
        "'fair': DispatchPolicy.Weighted([('a', 1), ('b', 0)])")


def test_max_executions_stops_a_workload_that_never_goes_idle(make_app: MakeApp) -> None:
    # Given a job that enqueues a follow-up due now, for ever
    app = make_app()
    ran: list[int] = []

    @app.job("again")
    def again(n: int) -> None:
        ran.append(n)
        again.enqueue(n + 1)

    app.add_worker_group(group("g", Strict("default"), pool_size=4))
    again.enqueue(0)
    # When the drive is bounded at 25 executions
    with pytest.raises(RuntimeError) as raised:
        app.run_until_idle(max_executions=25)
    # Then it stops with an error naming the bound and the likely cause, after exactly 25
    # executions, and the follow-up it did not run is still scheduled (nothing lost)
    message = str(raised.value)
    assert "max_executions=25" in message and "follow-up" in message
    assert ran == list(range(25))
    scheduled = [job for job in app.store.list_jobs(state=JobState.SCHEDULED)]
    assert [job.args for job in scheduled] == [(25,)]


def test_max_executions_is_no_error_for_a_drive_that_goes_idle_within_it(
    make_app: MakeApp, make_recorder: MakeRecorder
) -> None:
    # Given 6 jobs
    app = make_app()
    recorder = make_recorder(app)
    app.add_worker_group(group("g", Strict("q"), pool_size=4))
    recorder.enqueue("q", 6)
    # When the drive is bounded at exactly that many, Then it runs them and returns
    assert app.run_until_idle(max_executions=6) == 6
    assert app.run_until_idle(max_executions=0) == 0


@pytest.mark.parametrize(("bound", "error"), [
    (-1, ValueError), (1.5, TypeError), ("10", TypeError), (True, TypeError),
])
def test_max_executions_must_be_a_whole_number_of_zero_or_more(
    make_app: MakeApp, bound: object, error: type[Exception]
) -> None:
    app = make_app()
    app.add_worker_group(group("g", Strict("q")))
    with pytest.raises(error, match="max_executions"):
        app.run_until_idle(max_executions=bound)  # type: ignore[arg-type]
