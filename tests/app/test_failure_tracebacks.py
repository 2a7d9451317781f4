"""Failures you can read, through the App on every store: a failed attempt's traceback is
stored with its outcome and logged with it, the log line gives one reason per outcome,
and a requeue starts a fresh run."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

import rota
import rota.worker.group
from rota import JobState

MakeApp = Callable[[], rota.App]


def one_group(app: rota.App) -> None:
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("default")))


def failures_logged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records
            if record.name == "rota" and " failed: " in record.getMessage()]


def test_each_failed_attempt_stores_and_logs_its_own_traceback(
    make_app: MakeApp, clock: rota.VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a job that fails twice, each time with its own message, and has two attempts
    app = make_app()

    @app.job("charge", retry=rota.RetryPolicy(max_attempts=2, backoff=lambda _: 1))
    def charge(order: int) -> None:
        raise ValueError(f"card declined for order {order} (attempt {rota.current_job().attempt})")

    one_group(app)
    job_id = charge.enqueue(42)
    caplog.set_level(logging.INFO, logger="rota")
    # When its first attempt fails
    app.run_until_idle()
    job = app.get_job(job_id)
    # Then the retry stores the handler's traceback beside its error
    assert job is not None and job.state is JobState.SCHEDULED
    first = job.last_traceback
    assert first is not None and first.startswith("Traceback (most recent call last):\n")
    assert ", in charge\n" in first
    assert first.endswith("ValueError: card declined for order 42 (attempt 1)\n")
    # When the second attempt fails too
    clock.advance(1)
    app.run_until_idle()
    job = app.get_job(job_id)
    # Then the dead letter stores the second attempt's traceback, not the first's
    assert job is not None and job.state is JobState.DEAD_LETTERED
    assert job.last_traceback is not None
    assert job.last_traceback.endswith("ValueError: card declined for order 42 (attempt 2)\n")
    # And each failure was logged once, its record carrying the exception it raised
    records = failures_logged(caplog)
    assert [record.levelno for record in records] == [logging.WARNING, logging.WARNING]
    for record, attempt in zip(records, (1, 2), strict=True):
        assert record.exc_info is not None and isinstance(record.exc_info[1], ValueError)
        assert f"(attempt {attempt})" in str(record.exc_info[1])
    assert "; retry at " in records[0].getMessage()
    assert records[1].getMessage().endswith("; dead-lettered (no attempts left)")


def test_an_error_the_policy_does_not_retry_is_logged_with_its_one_reason(
    make_app: MakeApp, caplog: pytest.LogCaptureFixture
) -> None:
    # Given attempt 1 of 2 failing with an error outside the policy's retry_on
    app = make_app()

    @app.job("parse", retry=rota.RetryPolicy(max_attempts=2, retry_on=ConnectionError))
    def parse() -> None:
        raise ValueError("not a number")

    one_group(app)
    job_id = parse.enqueue()
    caplog.set_level(logging.WARNING, logger="rota")
    app.run_until_idle()
    # Then the log line says why it was not retried, and nothing about attempts left
    (record,) = failures_logged(caplog)
    message = record.getMessage()
    assert message.endswith(
        "failed: ValueError: not a number (ValueError is not in the RetryPolicy's retry_on: "
        "not retried); dead-lettered")
    assert "no attempts left" not in message
    job = app.get_job(job_id)
    assert job is not None and job.attempt == 1 and job.last_traceback is not None
    assert job.last_traceback.endswith("ValueError: not a number\n")


def test_a_timed_out_attempt_stores_the_timeout_traceback(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    app = make_app()

    @app.job("slow", timeout=1, retry=rota.RetryPolicy(max_attempts=1))
    def slow() -> None:
        clock.advance(2)

    one_group(app)
    job_id = slow.enqueue()
    app.run_until_idle()
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.DEAD_LETTERED
    assert job.last_traceback is not None
    assert "TimeoutError: job 'slow' ran longer than its timeout of 1 s" in job.last_traceback


def test_a_requested_retry_and_a_success_store_no_traceback(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a job that asks to be retried, one that succeeds, and a count of the
    # tracebacks formatted
    formatted: list[BaseException] = []
    real = rota.worker.group.format_traceback

    def counting(error: BaseException) -> str:
        formatted.append(error)
        return real(error)

    monkeypatch.setattr(rota.worker.group, "format_traceback", counting)
    app = make_app()

    @app.job("poll")
    def poll() -> None:
        raise rota.Retry(delay=60, reason="not ready")

    @app.job("ok")
    def ok() -> int:
        return 1

    one_group(app)
    retried, succeeded = poll.enqueue(), ok.enqueue()
    app.run_until_idle()
    # Then neither has a traceback, and none was even formatted
    for job_id in (retried, succeeded):
        job = app.get_job(job_id)
        assert job is not None and job.last_traceback is None
    job = app.get_job(retried)
    assert job is not None and job.last_error is not None and "not ready" in job.last_error
    assert formatted == []


def test_a_requeued_job_starts_afresh_without_its_last_error(make_app: MakeApp) -> None:
    # Given a job dead-lettered by its handler's error
    app = make_app()
    fail = [True]

    @app.job("flaky", retry=rota.RetryPolicy(max_attempts=1))
    def flaky() -> None:
        if fail[0]:
            raise RuntimeError("down")

    one_group(app)
    job_id = flaky.enqueue()
    app.run_until_idle()
    # When it is requeued
    assert app.requeue(job_id)
    # Then it is a fresh run: attempt 0, no last error, no traceback
    job = app.get_job(job_id)
    assert job is not None
    assert (job.state, job.attempt, job.last_error, job.last_traceback) == (
        JobState.SCHEDULED, 0, None, None)
    # And once it succeeds it still has none
    fail[0] = False
    app.run_until_idle()
    job = app.get_job(job_id)
    assert job is not None and (job.state, job.last_error, job.last_traceback) == (
        JobState.SUCCEEDED, None, None)
