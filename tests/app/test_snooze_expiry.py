"""`rota.Snooze` and `configure(expires=...)` through the App on every store, under
`run_until_idle` and a VirtualClock."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

import rota
from rota import JobState, OutcomeKind

MakeApp = Callable[[], rota.App]


def one_group(app: rota.App, retry: rota.RetryPolicy | None = None) -> None:
    options = {"retry": retry} if retry is not None else {}
    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), **options))  # type: ignore[arg-type]


def recorded(app: rota.App) -> list[rota.OutcomeEvent]:
    events: list[rota.OutcomeEvent] = []
    app.on_outcome(events.append)
    return events


# -- Snooze -----------------------------------------------------------------------------


def test_snooze_reschedules_without_counting_the_attempt(
    make_app: MakeApp, clock: rota.VirtualClock, caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a job that snoozes twice for 30 s, then succeeds
    app = make_app()
    runs: list[int] = []

    @app.job("poll")
    def poll() -> str:
        runs.append(rota.current_job().attempt)
        if len(runs) < 3:
            raise rota.Snooze(30, reason="export not ready")
        return "done"

    one_group(app)
    events = recorded(app)
    job_id = poll.enqueue()
    # When it runs, it is scheduled again 30 s later, its attempt not counted
    with caplog.at_level(logging.INFO, logger="rota"):
        assert app.run_until_idle() == 1
    job = app.get_job(job_id)
    assert job is not None
    assert (job.state, job.attempt, job.snoozes) == (JobState.SCHEDULED, 0, 1)
    assert job.due_at == clock.now() + timedelta(seconds=30)
    assert job.last_error is None
    assert "snoozed until" in caplog.text and "export not ready" in caplog.text
    assert "Traceback" not in caplog.text
    # And each run is attempt 1 until it succeeds
    clock.advance(30)
    assert app.run_until_idle() == 1
    clock.advance(30)
    assert app.run_until_idle() == 1
    job = app.get_job(job_id)
    assert job is not None
    assert (job.state, job.attempt, job.snoozes) == (JobState.SUCCEEDED, 1, 2)
    assert runs == [1, 1, 1]
    assert [event.kind for event in events] == [OutcomeKind.SNOOZED, OutcomeKind.SNOOZED,
                                                OutcomeKind.SUCCEEDED]
    assert events[0].error is None
    assert events[0].retry_at == events[0].finished_at + timedelta(seconds=30)


def test_a_job_that_snoozes_for_ever_never_dead_letters(
    make_app: MakeApp, clock: rota.VirtualClock,
) -> None:
    app = make_app()

    @app.job("wait")
    def wait() -> None:
        raise rota.Snooze(timedelta(seconds=1))

    one_group(app, rota.RetryPolicy(max_attempts=2))
    job_id = wait.enqueue()
    for _ in range(6):
        assert app.run_until_idle() == 1
        clock.advance(1)
    job = app.get_job(job_id)
    assert job is not None
    assert (job.state, job.attempt, job.snoozes) == (JobState.SCHEDULED, 0, 6)


@pytest.mark.parametrize(("delay", "error", "message"), [
    (-1, ValueError, "Snooze(delay) must be zero or more"),
    (math.nan, ValueError, "Snooze(delay) must be a finite number"),
    (math.inf, ValueError, "Snooze(delay) must be a finite number"),
    (1e300, ValueError, "Snooze(delay) of 1e+300 seconds is too long"),
    ("soon", TypeError, "Snooze(delay) must be a timedelta or a number of seconds"),
])
def test_a_bad_snooze_delay_fails_the_attempt_with_a_clear_error(
    make_app: MakeApp, delay: object, error: type[Exception], message: str,
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        rota.Snooze(delay)  # type: ignore[arg-type]
    # Raised where the handler builds it: the attempt fails (and counts); no snooze stored
    app = make_app()

    @app.job("bad")
    def bad() -> None:
        raise rota.Snooze(delay)  # type: ignore[arg-type]

    one_group(app, rota.RetryPolicy(max_attempts=1))
    job_id = bad.enqueue()
    assert app.run_until_idle() == 1
    job = app.get_job(job_id)
    assert job is not None
    assert (job.state, job.attempt, job.snoozes) == (JobState.DEAD_LETTERED, 1, 0)
    assert job.last_error is not None and message in job.last_error


def test_a_snooze_past_the_year_9999_fails_the_attempt(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("far")
    def far() -> None:
        raise rota.Snooze(timedelta(days=3_000_000))

    one_group(app, rota.RetryPolicy(max_attempts=1))
    job_id = far.enqueue()
    assert app.run_until_idle() == 1
    job = app.get_job(job_id)
    assert job is not None and (job.state, job.snoozes) == (JobState.DEAD_LETTERED, 0)
    assert job.last_error is not None and "past the year 9999" in job.last_error


# -- expiry -----------------------------------------------------------------------------


def test_a_job_due_after_its_expiry_ends_cancelled_unrun(
    make_app: MakeApp, clock: rota.VirtualClock, caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a job that must start within 60 s of its due time, and a plain one
    app = make_app()
    runs: list[str] = []

    @app.job("notify")
    def notify(who: str) -> None:
        runs.append(who)

    one_group(app)
    events = recorded(app)
    expiring = notify.configure(expires=60).enqueue("late")
    plain = notify.enqueue("plain")
    # When no worker claims them for 61 s
    clock.advance(61)
    with caplog.at_level(logging.WARNING, logger="rota"):
        assert app.run_until_idle() == 1
    # Then the expiring one never ran: cancelled, saying by when it had to start
    assert runs == ["plain"]
    job = app.get_job(expiring)
    assert job is not None and (job.state, job.attempt) == (JobState.CANCELLED, 0)
    deadline = (job.due_at + timedelta(seconds=60)).astimezone(UTC)
    assert job.expires_at == job.due_at + timedelta(seconds=60)
    assert job.last_error == f"Expired: not started by {deadline:%Y-%m-%d %H:%M:%S} UTC"
    assert "Expired: not started by" in caplog.text
    # And its outcome reached on_outcome as `expired`
    kinds = {event.job_id: event.kind for event in events}
    assert kinds == {expiring: OutcomeKind.EXPIRED, plain: OutcomeKind.SUCCEEDED}
    expired_event = next(event for event in events if event.job_id == expiring)
    assert expired_event.error == job.last_error
    assert expired_event.duration == timedelta(0)
    done = app.get_job(plain)
    assert done is not None and done.state is JobState.SUCCEEDED


def test_a_job_started_in_time_runs(make_app: MakeApp, clock: rota.VirtualClock) -> None:
    app = make_app()

    @app.job("notify")
    def notify() -> None:
        pass

    one_group(app)
    job_id = notify.configure(delay=10, expires=timedelta(seconds=5)).enqueue()
    clock.advance(15)  # due at +10, expires at +15: an attempt at +15 still starts
    assert app.run_until_idle() == 1
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.SUCCEEDED


def test_a_retry_due_after_the_expiry_never_starts(
    make_app: MakeApp, clock: rota.VirtualClock,
) -> None:
    app = make_app()
    runs: list[int] = []

    @app.job("flaky")
    def flaky() -> None:
        runs.append(1)
        raise ConnectionError("down")

    one_group(app, rota.RetryPolicy(max_attempts=5))
    job_id = flaky.configure(expires=clock.now() + timedelta(seconds=3)).enqueue()
    assert app.run_until_idle() == 1  # attempt 1 fails: retried 2 s later (in time)
    clock.advance(2)
    assert app.run_until_idle() == 1  # attempt 2 fails: retried 4 s later (too late)
    clock.advance(4)
    assert app.run_until_idle() == 0
    assert runs == [1, 1]
    job = app.get_job(job_id)
    assert job is not None and (job.state, job.attempt) == (JobState.CANCELLED, 2)
    assert job.last_error is not None and job.last_error.startswith("Expired:")


def test_an_expiry_already_past_at_enqueue_is_accepted_and_expires_at_the_first_claim(
    make_app: MakeApp, clock: rota.VirtualClock,
) -> None:
    app = make_app()

    @app.job("report")
    def report() -> None:
        raise AssertionError("an expired job must not run")

    one_group(app)
    job_id = report.configure(expires=clock.now() - timedelta(hours=1)).enqueue()
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.SCHEDULED
    assert app.run_until_idle() == 0
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.CANCELLED


def test_enqueue_many_gives_every_job_its_expiry(
    make_app: MakeApp, clock: rota.VirtualClock,
) -> None:
    app = make_app()

    @app.job("n")
    def n(i: int) -> None:
        pass

    ids = n.configure(delay=5, expires=10).enqueue_many([(1,), (2,)])
    for job_id in ids:
        job = app.get_job(job_id)
        assert job is not None and job.expires_at == clock.now() + timedelta(seconds=15)


@pytest.mark.parametrize(("expires", "error", "message"), [
    (-1, ValueError, "must be zero or more"),
    (math.nan, ValueError, "must be a finite number"),
    (1e300, ValueError, "is too long"),
    (True, TypeError, "takes a duration"),
    ("1h", TypeError, "takes a duration"),
    (datetime(2030, 1, 1), ValueError, "must be timezone-aware"),
])
def test_a_bad_expiry_is_refused_at_configure(
    make_app: MakeApp, expires: object, error: type[Exception], message: str,
) -> None:
    app = make_app()

    @app.job("n")
    def n() -> None:
        pass

    with pytest.raises(error, match=message):
        n.configure(expires=expires)  # type: ignore[arg-type]
    assert app.store.count_jobs() == {}


def test_an_expiry_past_the_year_9999_is_refused_at_enqueue(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("n")
    def n() -> None:
        pass

    with pytest.raises(ValueError, match="past the year 9999"):
        n.configure(expires=timedelta(days=3_000_000)).enqueue()
    assert app.store.count_jobs() == {}


def test_snooze_is_exported() -> None:
    assert "Snooze" in rota.__all__ and rota.Snooze is not rota.Retry


def test_a_weighted_group_runs_every_live_job_behind_expired_ones(
    make_app: MakeApp, clock: rota.VirtualClock,
) -> None:
    # Given two Queues under a Weighted group, each with expired jobs ahead of live ones
    app = make_app()
    runs: list[str] = []

    @app.job("n")
    def n(tag: str) -> None:
        runs.append(tag)

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Weighted([("a", 1), ("b", 1)]), pool_size=2))
    events = recorded(app)
    past = clock.now() - timedelta(seconds=1)
    for queue in ("a", "b"):
        n.configure(queue=queue, expires=past).enqueue_many([(f"{queue}-x",)] * 3)
        n.configure(queue=queue).enqueue_many([(f"{queue}-{i}",) for i in range(2)])
    # When the group drains them
    assert app.run_until_idle() == 4
    # Then every live job ran, and every expired one was reported, never run
    assert sorted(runs) == ["a-0", "a-1", "b-0", "b-1"]
    assert [event.kind for event in events].count(OutcomeKind.EXPIRED) == 6
