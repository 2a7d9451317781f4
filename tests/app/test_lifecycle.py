"""The job lifecycle through an App under `run_until_idle()`, on every store kind:
current_job, results, started_at, the payload limit, timeouts on the virtual clock,
cancel and requeue."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest

import rota
from rota import JobState, RetryPolicy, Strict, WorkerGroupOptions
from rota.core.jobs import CANCELLED_ON_REQUEST

MakeApp = Callable[[], rota.App]


def app_with_group(make_app: MakeApp, **options: object) -> rota.App:
    app = make_app()
    app.add_worker_group(WorkerGroupOptions(
        name="g", policy=Strict("q"), **options))  # type: ignore[arg-type]
    return app


def record(app: rota.App, job_id: int) -> rota.JobRecord:
    job = app.get_job(job_id)
    assert job is not None
    return job


# -- current_job ---------------------------------------------------------------------------


def test_current_job_inside_sync_and_async_handlers(make_app: MakeApp) -> None:
    app = app_with_group(make_app)
    seen: list[tuple[int, str, str, int, bool]] = []

    def describe() -> None:
        job = rota.current_job()
        seen.append((job.id, job.name, job.queue, job.attempt, job.cancel_requested))

    @app.job("sync", queue="q")
    def sync_handler() -> None:
        describe()

    @app.job("async", queue="q")
    async def async_handler() -> None:
        await asyncio.sleep(0)
        describe()

    first = sync_handler.enqueue()
    second = async_handler.enqueue()
    assert app.run_until_idle() == 2
    assert seen == [(first, "sync", "q", 1, False), (second, "async", "q", 1, False)]


def test_current_job_outside_a_handler_is_a_lookup_error() -> None:
    with pytest.raises(LookupError, match="outside a job handler"):
        rota.current_job()


def test_current_job_counts_attempts(make_app: MakeApp) -> None:
    app = app_with_group(make_app, retry=RetryPolicy(max_attempts=3, backoff=lambda _: 0))
    attempts: list[int] = []

    @app.job("flaky", queue="q")
    def flaky() -> None:
        attempts.append(rota.current_job().attempt)
        if len(attempts) < 3:
            raise ValueError("not yet")

    flaky.enqueue()
    app.run_until_idle()
    assert attempts == [1, 2, 3]


# -- results, started_at -----------------------------------------------------------------


def test_results_and_start_times_are_stored(make_app: MakeApp, clock: rota.VirtualClock) -> None:
    # Given a job enqueued at T and run at T + 10 s that returns a dict
    app = app_with_group(make_app)

    @app.job("sum", queue="q")
    def add(a: int, b: int) -> dict[str, int]:
        return {"sum": a + b}

    @app.job("nothing", queue="q")
    def nothing() -> None:
        pass

    enqueued_at = clock.now()
    job_id = add.enqueue(2, 3)
    none_id = nothing.enqueue()
    clock.advance(10)
    app.run_until_idle()
    # Then the record holds the result, when it was created and when the attempt started
    job = record(app, job_id)
    assert (job.state, job.result) == (JobState.SUCCEEDED, {"sum": 5})
    assert job.created_at == enqueued_at
    assert job.started_at == enqueued_at + timedelta(seconds=10)
    assert record(app, none_id).result is None


def test_a_result_that_is_not_json_fails_the_attempt_naming_its_type(make_app: MakeApp) -> None:
    app = app_with_group(make_app, retry=RetryPolicy(max_attempts=1))

    @app.job("bad", queue="q")
    def bad() -> object:
        return {1, 2}

    job_id = bad.enqueue()
    app.run_until_idle()
    job = record(app, job_id)
    assert job.state is JobState.DEAD_LETTERED
    assert job.last_error is not None and "TypeError" in job.last_error
    assert "returned a set" in job.last_error


# -- the payload limit ------------------------------------------------------------------


def test_arguments_over_one_mebibyte_are_refused_before_anything_is_stored(
    make_app: MakeApp,
) -> None:
    app = make_app()

    @app.job("big", queue="q")
    def big(text: str) -> None: ...

    with pytest.raises(rota.PayloadTooLarge) as refused:
        big.enqueue("x" * (1024 * 1024))
    assert "1,048,582 bytes" in str(refused.value)  # the text, [""] and {}
    assert "1,048,576 bytes" in str(refused.value)
    assert "max_payload_bytes" in str(refused.value)
    with pytest.raises(rota.PayloadTooLarge):
        big.enqueue_many([("small",), ("x" * (1024 * 1024),)])
    assert app.store.count_jobs() == {}
    big.enqueue("x" * 1000)  # well under: fine
    assert sum(app.store.count_jobs().values()) == 1


def test_the_payload_limit_is_a_setting_of_the_app(make_app: MakeApp, store_url: str,
                                                   clock: rota.VirtualClock) -> None:
    shared = make_app()  # keeps a memory:// store shared with the App below
    app = rota.App(shared.store, clock=clock, max_payload_bytes=100)
    app.add_worker_group(WorkerGroupOptions(name="g", policy=Strict("q"),
                                            retry=RetryPolicy(max_attempts=1)))

    @app.job("echo", queue="q")
    def echo(text: str) -> str:
        return text * 2

    with pytest.raises(rota.PayloadTooLarge, match="over the limit of 100 bytes"):
        echo.enqueue("x" * 100)
    job_id = echo.enqueue("x" * 60)  # 60 in, 120 out: the result is over
    app.run_until_idle()
    job = record(app, job_id)
    assert job.state is JobState.DEAD_LETTERED and job.result is None
    assert job.last_error is not None
    assert "PayloadTooLarge" in job.last_error and "max_payload_bytes" in job.last_error


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "1MB"])
def test_a_bad_payload_limit_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="max_payload_bytes"):
        rota.App("memory://", max_payload_bytes=bad)  # type: ignore[arg-type]


# -- timeouts on the virtual clock -------------------------------------------------------


def test_an_attempt_longer_than_its_timeout_on_the_clock_fails_with_timeout_error(
    make_app: MakeApp, clock: rota.VirtualClock,
) -> None:
    # Given a job with a 30 s timeout whose handler takes 31 s of virtual time, then 29 s
    app = app_with_group(make_app, retry=RetryPolicy(max_attempts=3, backoff=lambda _: 0))
    took = [31, 29]

    @app.job("slow", queue="q", timeout=30)
    def slow() -> str:
        clock.advance(took.pop(0))
        return "done"

    job_id = slow.enqueue()
    # When the drive runs it: the first attempt fails (retried), the second succeeds
    assert app.run_until_idle() == 2
    job = record(app, job_id)
    assert (job.state, job.attempt, job.result) == (JobState.SUCCEEDED, 2, "done")
    assert job.last_error is not None
    assert job.last_error.startswith("TimeoutError: job 'slow' ran longer than its timeout")


def test_async_handlers_time_out_on_the_clock_too(
    make_app: MakeApp, clock: rota.VirtualClock,
) -> None:
    app = app_with_group(make_app, retry=RetryPolicy(max_attempts=1))

    @app.job("slow", queue="q", timeout=timedelta(seconds=5))
    async def slow() -> None:
        clock.advance(6)

    job_id = slow.enqueue()
    app.run_until_idle()
    job = record(app, job_id)
    assert job.state is JobState.DEAD_LETTERED
    assert job.last_error is not None and job.last_error.startswith("TimeoutError")


@pytest.mark.parametrize(("bad", "error"), [(0, ValueError), (-1, ValueError),
                                            ("30", TypeError)])
def test_a_bad_timeout_is_refused(make_app: MakeApp, bad: object, error: type) -> None:
    app = make_app()
    with pytest.raises(error, match="timeout"):
        app.job("x", timeout=bad)  # type: ignore[arg-type]


# -- cancel and requeue ------------------------------------------------------------------


def test_cancel_of_a_scheduled_job_ends_it_and_of_a_finished_one_is_false(
    make_app: MakeApp,
) -> None:
    app = app_with_group(make_app)
    ran: list[int] = []

    @app.job("work", queue="q")
    def work(n: int) -> None:
        ran.append(n)

    dropped, kept = work.enqueue(1), work.enqueue(2)
    assert app.cancel(dropped) is True
    app.run_until_idle()
    assert ran == [2]
    assert app.cancel(kept) is False  # succeeded
    assert app.cancel(dropped) is False  # already cancelled
    assert app.cancel(10**9) is False


def test_a_job_whose_cancel_was_requested_while_it_ran_is_never_retried(
    make_app: MakeApp,
) -> None:
    # Given a running job that asks for its own cancel, then fails
    app = app_with_group(make_app, retry=RetryPolicy(max_attempts=5, backoff=lambda _: 0))
    runs: list[int] = []

    @app.job("doomed", queue="q")
    def doomed() -> None:
        job = rota.current_job()
        runs.append(job.attempt)
        assert app.cancel(job.id) is True  # leased: a request
        raise RuntimeError("gave up")

    job_id = doomed.enqueue()
    app.run_until_idle()
    # Then it ran once and ended cancelled on request
    assert runs == [1]
    job = record(app, job_id)
    assert (job.state, job.last_error) == (JobState.CANCELLED, CANCELLED_ON_REQUEST)


def test_requeue_brings_back_a_dead_lettered_job_that_then_succeeds(make_app: MakeApp) -> None:
    # Given a job dead-lettered after its one attempt
    app = app_with_group(make_app, retry=RetryPolicy(max_attempts=1))
    healthy = False

    @app.job("provider", queue="q")
    def provider() -> str:
        if not healthy:
            raise ConnectionError("provider down")
        return "sent"

    job_id = provider.enqueue()
    app.run_until_idle()
    assert record(app, job_id).state is JobState.DEAD_LETTERED
    assert app.requeue(job_id + 1000) is False
    # When the provider is back and the job is requeued
    healthy = True
    assert app.requeue(job_id) is True
    job = record(app, job_id)
    assert (job.state, job.attempt) == (JobState.SCHEDULED, 0)
    # Then it runs again, from attempt 1, and succeeds
    assert app.run_until_idle() == 1
    job = record(app, job_id)
    assert (job.state, job.attempt, job.result) == (JobState.SUCCEEDED, 1, "sent")
    assert app.requeue(job_id) is False  # succeeded: nothing to bring back


def test_requeue_takes_int_ids(make_app: MakeApp) -> None:
    with pytest.raises(TypeError, match="job ids are ints"):
        make_app().requeue("1")  # type: ignore[arg-type]
