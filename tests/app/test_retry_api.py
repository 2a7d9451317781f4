"""Retries that fit the failure, through the App on every store: `retry_on`,
`give_up_on`, `rota.Retry(delay)` and jitter, under `run_until_idle` and a VirtualClock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

import rota
from rota import JobState

MakeApp = Callable[[], rota.App]


def one_group(app: rota.App, retry: rota.RetryPolicy | None = None) -> None:
    options = {"retry": retry} if retry is not None else {}
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), **options))  # type: ignore[arg-type]


def test_an_error_not_in_retry_on_dead_letters_at_once(make_app: MakeApp) -> None:
    # Given a job that retries only connection errors, and fails with a KeyError
    app = make_app()

    @app.job("lookup", retry=rota.RetryPolicy(retry_on=ConnectionError))
    def lookup() -> None:
        raise KeyError("customer 42")

    one_group(app)
    job_id = lookup.enqueue()
    # When it runs once
    assert app.run_until_idle() == 1
    # Then it is dead-lettered after its first attempt, saying why
    job = app.get_job(job_id)
    assert job is not None and (job.state, job.attempt) == (JobState.DEAD_LETTERED, 1)
    assert job.last_error == ("KeyError: 'customer 42' (KeyError is not in the RetryPolicy's "
                              "retry_on: not retried)")


def test_an_error_in_retry_on_is_retried_on_the_backoff(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    app = make_app()
    calls: list[int] = []

    @app.job("fetch", retry=rota.RetryPolicy(max_attempts=3, retry_on=(ConnectionError,)))
    def fetch() -> None:
        calls.append(1)
        raise ConnectionResetError("peer reset")

    one_group(app)
    job_id = fetch.enqueue()
    assert app.run_until_idle() == 1
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.SCHEDULED
    assert job.due_at == clock.now() + timedelta(seconds=2)
    clock.advance(2)
    assert app.run_until_idle() == 1
    clock.advance(4)
    assert app.run_until_idle() == 1
    job = app.get_job(job_id)
    assert job is not None and (job.state, job.attempt) == (JobState.DEAD_LETTERED, 3)
    assert job.last_error == "ConnectionResetError: peer reset"


def test_give_up_on_from_the_group_policy_dead_letters_at_once(make_app: MakeApp) -> None:
    # Given the group's policy gives up on ValueError
    app = make_app()

    @app.job("parse")
    def parse(text: str) -> int:
        return int(text)

    one_group(app, rota.RetryPolicy(give_up_on=ValueError))
    bad, good = parse.enqueue("x"), parse.enqueue("7")
    assert app.run_until_idle() == 2
    bad_job, good_job = app.get_job(bad), app.get_job(good)
    assert bad_job is not None and bad_job.state is JobState.DEAD_LETTERED
    assert bad_job.last_error is not None and "give_up_on" in bad_job.last_error
    assert good_job is not None and good_job.result == 7


def test_retry_raised_by_a_handler_runs_it_again_after_that_delay(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given a handler that asks to be retried in 90 s once, then succeeds
    app = make_app()
    seen: list[int] = []

    @app.job("poll", retry=rota.RetryPolicy(retry_on=ConnectionError))
    def poll() -> str:
        attempt = rota.current_job().attempt
        seen.append(attempt)
        if attempt == 1:
            raise rota.Retry(90, "not ready yet")
        return "ready"

    one_group(app)
    job_id = poll.enqueue()
    # When it runs: retry_on does not apply to the request
    assert app.run_until_idle() == 1
    job = app.get_job(job_id)
    assert job is not None and (job.state, job.attempt) == (JobState.SCHEDULED, 1)
    assert job.due_at == clock.now() + timedelta(seconds=90)
    assert job.last_error == "Retry: retry requested in 90 s: not ready yet"
    # Then nothing runs before the delay, and it runs after it
    clock.advance(89)
    assert app.run_until_idle() == 0
    clock.advance(1)
    assert app.run_until_idle() == 1
    job = app.get_job(job_id)
    assert job is not None and (job.state, job.result) == (JobState.SUCCEEDED, "ready")
    assert seen == [1, 2]


def test_retry_counts_as_an_attempt_so_max_attempts_bounds_it(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    app = make_app()

    @app.job("forever", retry=rota.RetryPolicy(max_attempts=3))
    def forever() -> None:
        raise rota.Retry(timedelta(seconds=1))

    one_group(app)
    job_id = forever.enqueue()
    for _ in range(5):
        app.run_until_idle()
        clock.advance(1)
    job = app.get_job(job_id)
    assert job is not None and (job.state, job.attempt) == (JobState.DEAD_LETTERED, 3)


def test_jitter_gives_the_same_schedule_on_every_store(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given jobs failing together under a policy with jitter
    app = make_app()

    @app.job("flaky", retry=rota.RetryPolicy(jitter=0.5))
    def flaky(n: int) -> None:
        raise ConnectionError("down")

    one_group(app)
    ids = flaky.enqueue_many([(n,) for n in range(20)])
    assert app.run_until_idle() == 20
    # Then their retries are spread over [1 s, 2 s] after the failure, not all at 2 s
    delays = []
    for job_id in ids:
        job = app.get_job(job_id)
        assert job is not None and job.state is JobState.SCHEDULED
        delays.append((job.due_at - clock.now()).total_seconds())
    assert all(1 <= d <= 2 for d in delays) and len(set(delays)) > 10
    # And the delays depend only on job id and attempt: the same on every store and run
    policy = rota.RetryPolicy(jitter=0.5)
    expected = [policy.decide(1, ConnectionError(), job_id=i) for i in ids]
    assert delays == [d.delay.total_seconds() for d in expected]  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", [{"retry_on": "OSError"}, {"jitter": 2}])
def test_bad_options_fail_at_the_decorator_not_at_run_time(bad: dict[str, object]) -> None:
    with pytest.raises((TypeError, ValueError)):
        rota.RetryPolicy(**bad)  # type: ignore[arg-type]
