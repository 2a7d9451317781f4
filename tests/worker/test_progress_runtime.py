"""Progress and the worker id inside a real-time runtime, on every store: a sync handler
(on a Worker thread) and an async one (on the event loop) report progress that is
readable while they run and whose last report is stored with the outcome; every job
records the id `rota workers` lists for the worker that ran it. Waits on store
conditions, never sleeps for a fixed time, asserts no duration."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

import rota
from rota import JobState
from rota.store import Store, open_store
from tests.waiting import until

DEADLINE_S = 20.0  # generous: a loaded machine, every store


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()


def test_progress_while_running_and_the_worker_that_ran_it(store: Store) -> None:
    app = rota.App(store, retention=None)
    go_on_async = asyncio.Event()
    go_on_sync = threading.Event()

    @app.job("copy")
    def copy() -> None:  # a sync handler: on a Worker thread
        current = rota.current_job()
        current.set_progress(1, 3, "first file")
        assert go_on_sync.wait(DEADLINE_S)
        current.set_progress(2, 3, "second file")
        current.set_progress(3, 3, "all copied")

    @app.job("scan")
    async def scan() -> None:  # an async handler: on the event loop
        current = rota.current_job()
        current.set_progress(10, None, "pages")
        await go_on_async.wait()
        current.set_progress(20, None, "pages, done")

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=2, poll_interval=0.05,
        heartbeat_interval=0.1))
    copy_id = app.jobs["copy"].enqueue()
    scan_id = app.jobs["scan"].enqueue()

    def progress_of(job_id: int) -> rota.Progress | None:
        job = app.get_job(job_id)
        return None if job is None else job.progress

    async def scenario() -> None:
        async with app.serve():
            # While they run, the first report of each is in the store
            await until(lambda: progress_of(copy_id) is not None
                        and progress_of(scan_id) is not None, DEADLINE_S)
            copied, scanned = progress_of(copy_id), progress_of(scan_id)
            assert copied is not None and (copied.done, copied.total, copied.message) == (
                1, 3, "first file")
            assert scanned is not None and (scanned.done, scanned.total) == (10, None)
            go_on_sync.set()
            go_on_async.set()
            await until(lambda: all(
                (job := app.get_job(i)) is not None and job.state is JobState.SUCCEEDED
                for i in (copy_id, scan_id)), DEADLINE_S)
            await until(lambda: len(app.workers()) == 1, DEADLINE_S)
            [worker] = app.workers()
            # The last report of each is stored, and each job names this worker
            for job_id, last in ((copy_id, (3, 3, "all copied")),
                                 (scan_id, (20, None, "pages, done"))):
                job = app.get_job(job_id)
                assert job is not None and job.progress is not None
                assert (job.progress.done, job.progress.total, job.progress.message) == last
                assert job.worker == worker.id

    asyncio.run(scenario())
    app.close()
