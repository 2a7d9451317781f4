"""Progress, failed attempts and workers through the App, on every store:
`rota.current_job().set_progress` is readable while the job runs, written at most once a
second per job (the first at once, the last when the handler returns), never when a
handler does not report; `JobRecord.errors` keeps every failed attempt and `worker` the
drive that ran the last one; a cancel before the job ran says so."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from datetime import timedelta

import pytest

import rota
from rota import JobState, Progress
from rota.core.jobs import Lease

MakeApp = Callable[[], rota.App]


def one_group(app: rota.App) -> None:
    app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("default")))


def count_progress_writes(app: rota.App, monkeypatch: pytest.MonkeyPatch) -> list[Progress]:
    """Every progress write that reaches the store, as it is called."""
    written: list[Progress] = []
    store_write = app.store.set_progress

    def counting(lease: Lease, progress: Progress) -> bool:
        written.append(progress)
        return store_write(lease, progress)

    monkeypatch.setattr(app.store, "set_progress", counting)
    return written


def test_progress_is_readable_while_the_job_runs(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given a handler that reports, then reads its own job from the store
    app = make_app()
    seen: list[Progress | None] = []

    @app.job("import_rows")
    def import_rows() -> None:
        current = rota.current_job()
        current.set_progress(3, 10, "rows")
        job = app.get_job(current.id)
        assert job is not None
        seen.append(job.progress)

    one_group(app)
    job_id = import_rows.enqueue()
    app.run_until_idle()
    # Then the first report reached the store at once, exactly as given
    assert seen == [Progress(3, 10, "rows", clock.now())]
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.SUCCEEDED
    assert job.progress == Progress(3, 10, "rows", clock.now())
    assert job.progress.fraction == 0.3


def test_at_most_one_progress_write_a_second_and_the_last_one_always(
    make_app: MakeApp, clock: rota.VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a handler that reports 10,000 times over 5 virtual seconds
    app = make_app()
    calls = 10_000
    step = timedelta(seconds=5) / calls

    @app.job("crunch")
    async def crunch() -> None:
        current = rota.current_job()
        for done in range(1, calls + 1):
            clock.advance(step)
            current.set_progress(done, calls, f"item {done}")

    one_group(app)
    written = count_progress_writes(app, monkeypatch)
    job_id = crunch.enqueue()
    start = clock.now()
    app.run_until_idle()
    # Then at most one write a second reached the store (the first at once), 6 at most
    assert 1 < len(written) <= 6
    assert written[0] == Progress(1, calls, "item 1", start + step)
    assert all(later.at - earlier.at >= timedelta(seconds=1)
               for earlier, later in itertools.pairwise(written[:-1]))
    # And the last report is the one stored, flushed when the handler returned
    job = app.get_job(job_id)
    assert job is not None
    assert job.progress == written[-1] == Progress(calls, calls, f"item {calls}", clock.now())


def test_a_sync_handler_reports_the_same_way(
    make_app: MakeApp, clock: rota.VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app()

    @app.job("resize")
    def resize() -> None:
        current = rota.current_job()
        current.set_progress(0, 2)
        current.set_progress(1, 2)  # within the second: held back
        clock.advance(timedelta(seconds=1))
        current.set_progress(2, 2, "done")

    one_group(app)
    written = count_progress_writes(app, monkeypatch)
    job_id = resize.enqueue()
    app.run_until_idle()
    assert [(p.done, p.message) for p in written] == [(0, ""), (2, "done")]
    job = app.get_job(job_id)
    assert job is not None and job.progress is not None and job.progress.done == 2


def test_a_handler_that_does_not_report_writes_no_progress(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app()

    @app.job("quiet")
    async def quiet() -> None:
        rota.current_job()

    one_group(app)
    written = count_progress_writes(app, monkeypatch)
    job_ids = [quiet.enqueue() for _ in range(5)]
    app.run_until_idle()
    assert written == []
    for job_id in job_ids:
        job = app.get_job(job_id)
        assert job is not None and job.progress is None


def test_the_progress_of_a_failed_attempt_is_written_before_its_outcome(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    app = make_app()

    @app.job("flaky", retry=rota.RetryPolicy(max_attempts=1))
    def flaky() -> None:
        current = rota.current_job()
        current.set_progress(1, 4)
        current.set_progress(2, 4, "half")  # held back, then flushed
        raise ValueError("broke at half")

    one_group(app)
    job_id = flaky.enqueue()
    app.run_until_idle()
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.DEAD_LETTERED
    assert job.progress == Progress(2, 4, "half", clock.now())


@pytest.mark.parametrize(("args", "error", "words"), [
    (("3",), TypeError, "done must be a number"),
    ((True,), TypeError, "done must be a number"),
    ((-1,), ValueError, "0 or more"),
    ((float("nan"),), ValueError, "finite"),
    ((1, float("inf")), ValueError, "finite"),
    ((5, 4), ValueError, "done (5) is more than total (4)"),
    ((1, 2, 3), TypeError, "message must be a str"),
    ((1, 2, "x" * 501), ValueError, "at most 500"),
])
def test_bad_progress_is_refused_with_a_clear_error(
    make_app: MakeApp, args: tuple[object, ...], error: type[Exception], words: str
) -> None:
    # Given a handler that reports something wrong, and catches what it gets
    app = make_app()
    raised: list[Exception] = []

    @app.job("wrong")
    def wrong() -> None:
        try:
            rota.current_job().set_progress(*args)  # type: ignore[arg-type]
        except Exception as caught:
            raised.append(caught)

    one_group(app)
    job_id = wrong.enqueue()
    app.run_until_idle()
    # Then it was refused with a message that names the problem, and nothing was written
    (caught,) = raised
    assert isinstance(caught, error) and words in str(caught)
    job = app.get_job(job_id)
    assert job is not None and job.progress is None and job.state is JobState.SUCCEEDED


def test_every_failed_attempt_and_the_worker_are_kept(
    make_app: MakeApp, clock: rota.VirtualClock
) -> None:
    # Given a job that fails twice, then succeeds
    app = make_app()

    @app.job("send", retry=rota.RetryPolicy(max_attempts=3, backoff=lambda _: 1))
    def send() -> None:
        attempt = rota.current_job().attempt
        if attempt < 3:
            raise ConnectionError(f"refused (attempt {attempt})")

    one_group(app)
    job_id = send.enqueue()
    for _ in range(3):
        app.run_until_idle()
        clock.advance(timedelta(seconds=1))
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.SUCCEEDED
    # Then both failures are kept, oldest first, with their tracebacks
    assert [(e.attempt, e.error) for e in job.errors] == [
        (1, "ConnectionError: refused (attempt 1)"),
        (2, "ConnectionError: refused (attempt 2)"),
    ]
    assert all(e.traceback is not None and e.traceback.startswith("Traceback")
               for e in job.errors)
    assert job.errors[1].at - job.errors[0].at == timedelta(seconds=1)
    # And the worker is the drive's own id (host:pid:token), kept after it succeeded
    assert job.worker is not None
    _host, pid, token = job.worker.split(":")
    assert (int(pid), len(token)) == (os.getpid(), 8)
    assert {e.worker for e in job.errors} == {job.worker}


def test_a_cancel_of_a_scheduled_job_says_cancelled_on_request(make_app: MakeApp) -> None:
    app = make_app()

    @app.job("later")
    def later() -> None:
        pass

    job_id = later.enqueue()
    assert app.cancel(job_id)
    job = app.get_job(job_id)
    assert job is not None
    assert (job.state, job.last_error, job.errors) == (
        JobState.CANCELLED, "Cancelled on request", ())
