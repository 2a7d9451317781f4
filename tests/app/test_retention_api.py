"""`App(retention=...)` and `app.purge`, on every store, with a virtual clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

import rota
from rota.core.jobs import JobState

MakeApp = Callable[[], rota.App]
DAY = timedelta(days=1)


def app_with_jobs(make_app: MakeApp) -> rota.App:
    app = make_app()

    @app.job("ok")
    def ok() -> None:
        pass

    @app.job("bad", retry=rota.RetryPolicy(max_attempts=1))
    def bad() -> None:
        raise RuntimeError("no")

    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("default")))
    return app


def test_app_retention_defaults_and_checks_its_type(make_app: MakeApp) -> None:
    assert make_app().retention == rota.Retention()
    assert rota.App("memory://", retention=None).retention is None
    with pytest.raises(TypeError, match=r"retention must be a rota\.Retention"):
        rota.App("memory://", retention=7)  # type: ignore[arg-type]


def test_purge_deletes_finished_jobs_older_than_the_duration(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given jobs that succeeded or were dead-lettered at the start, and later ones
    app = app_with_jobs(make_app)
    early_ok = app.jobs["ok"].enqueue_many([()] * 3)
    (early_bad,) = app.jobs["bad"].enqueue_many([()])
    (cancelled,) = app.jobs["ok"].configure(delay=60).enqueue_many([()])
    assert app.cancel(cancelled)
    assert app.run_until_idle() == 4
    clock.advance(3 * DAY)
    late_ok = app.jobs["ok"].enqueue_many([()] * 2)
    (waiting,) = app.jobs["ok"].configure(delay=3600).enqueue_many([()])
    assert app.run_until_idle() == 2
    clock.advance(timedelta(hours=1))
    # When purging the succeeded ones older than two days (timedelta or seconds)
    assert app.purge(2 * DAY, states=["succeeded"]) == 3
    assert [app.get_job(i) for i in early_ok] == [None] * 3
    # Then the others stay; purging every finished state takes the failure and the
    # cancellation too, and the jobs of the last hour only at 0 s
    assert app.get_job(early_bad) is not None and app.get_job(cancelled) is not None
    assert app.purge((2 * DAY).total_seconds()) == 2
    assert {job.id for job in app.store.list_jobs()} == {*late_ok, waiting}
    assert app.purge(0) == 2
    job = app.get_job(waiting)
    assert job is not None and job.state is JobState.SCHEDULED


def test_run_until_idle_never_prunes(make_app: MakeApp, clock: rota.VirtualClock) -> None:
    # Given a job that succeeded, then a clock moved far past the retention
    app = app_with_jobs(make_app)
    (job_id,) = app.jobs["ok"].enqueue_many([()])
    app.run_until_idle()
    clock.advance(30 * DAY)
    # When the deterministic drive runs again
    app.run_until_idle()
    # Then the finished job is still there to inspect
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.SUCCEEDED
    assert job.finished_at == clock.now() - 30 * DAY


@pytest.mark.parametrize(
    ("older_than", "states", "error", "message"),
    [
        (-1, None, ValueError, "older_than must be zero or more"),
        ("7d", None, TypeError, "older_than must be a timedelta or a number"),
        (DAY, ["scheduled"], ValueError, "only finished jobs, not scheduled"),
        (DAY, [JobState.LEASED], ValueError, "only finished jobs, not leased"),
    ],
)
def test_purge_refuses_bad_input_and_deletes_nothing(
    make_app: MakeApp, clock: rota.VirtualClock, older_than: object, states: object,
    error: type[Exception], message: str,
) -> None:
    app = app_with_jobs(make_app)
    app.jobs["ok"].enqueue_many([()])
    app.run_until_idle()
    clock.advance(30 * DAY)
    with pytest.raises(error, match=message):
        app.purge(older_than, states=states)  # type: ignore[arg-type]
    assert sum(app.store.count_jobs().values()) == 1
