"""`rota worker` as a subprocess: SIGTERM, SIGKILL and several processes on one store.

The children print one line per handler start and per outcome (see process_app.py); the
tests wait on those lines with timeouts, never by sleeping.
"""

from __future__ import annotations

import queue
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import rota
from rota.core.jobs import JobState
from tests.worker.child_process import WorkerProcess

APP = "tests.worker.process_app:app"

pytestmark = pytest.mark.slow


class Worker(WorkerProcess):
    """A `rota worker` child of process_app.py whose stdout lines arrive on `lines`."""

    def __init__(self, store_url: str, lines: queue.Queue[tuple[int, str]], *extra: str,
                 **env: str) -> None:
        super().__init__(APP, {"ROTA_TEST_STORE": store_url, **env},
                         lambda pid, text: lines.put((pid, text)), *extra, timeout_s=15)


@pytest.fixture
def workers() -> Iterator[Callable[..., Worker]]:
    started: list[Worker] = []
    lines: queue.Queue[tuple[int, str]] = queue.Queue()

    def start(store_url: str, *extra: str, **env: str) -> Worker:
        worker = Worker(store_url, lines, *extra, **env)
        started.append(worker)
        return worker

    start.lines = lines  # type: ignore[attr-defined]
    yield start
    for worker in started:
        worker.close()


def next_line(
    workers: Callable[..., Worker], prefix: str, timeout_s: float = 15
) -> tuple[int, str]:
    lines: queue.Queue[tuple[int, str]] = workers.lines  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout_s
    while True:
        pid, line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        if line.startswith(prefix):
            return pid, line


@pytest.fixture
def producer(durable_store_url: str) -> Iterator[rota.App]:
    app = rota.App(durable_store_url)
    app.job("work")(lambda n: None)
    yield app
    app.close()


def enqueue(app: rota.App, numbers: list[int]) -> list[int]:
    return app.jobs["work"].enqueue_many([(n,) for n in numbers])


def test_sigterm_finishes_running_jobs_and_hands_back_the_rest(
    durable_store_url: str, producer: rota.App, workers: Callable[..., Worker]
) -> None:
    # Given a worker of 2 Workers running a 0.3 s job and an endless one, 3 more queued
    short_id, endless_id, *queued = enqueue(producer, [1_000_000, -1, 0, 0, 0])
    worker = workers(durable_store_url, "--grace", "1", ROTA_TEST_POOL="2")
    worker.wait_ready()
    next_line(workers, "start")
    next_line(workers, "start")
    # When it receives SIGTERM
    began = time.monotonic()
    worker.signal(signal.SIGTERM)
    code = worker.wait()
    took = time.monotonic() - began
    # Then it exits 0 soon after the grace period: the short job succeeded, the endless one
    # was handed back with its attempt not counted, the queued ones were never claimed
    assert code == 0, worker.stderr()
    assert took < 4
    short, endless = producer.get_job(short_id), producer.get_job(endless_id)
    assert short is not None and short.state is JobState.SUCCEEDED
    assert endless is not None and (endless.state, endless.attempt) == (JobState.SCHEDULED, 0)
    for job_id in queued:
        job = producer.get_job(job_id)
        assert job is not None and (job.state, job.attempt) == (JobState.SCHEDULED, 0)


def test_after_sigkill_another_worker_reruns_the_killed_jobs(
    durable_store_url: str, producer: rota.App, workers: Callable[..., Worker]
) -> None:
    # Given a worker with 1 s leases running 3 endless jobs, 3 more queued behind them
    endless = enqueue(producer, [-1, -2, -3])
    rest = enqueue(producer, [1, 2, 3])
    first = workers(durable_store_url, ROTA_TEST_POOL="3", ROTA_TEST_LEASE_S="1")
    for _ in endless:
        next_line(workers, "start")
    # When it is killed mid-run and another worker (where those jobs are quick) starts
    first.signal(signal.SIGKILL)
    assert first.wait() == -signal.SIGKILL
    second = workers(durable_store_url, ROTA_TEST_POOL="3", ROTA_TEST_LEASE_S="1",
                     ROTA_TEST_LONG_S="0")
    attempts: dict[int, int] = {}
    while len(attempts) < 6:
        _, line = next_line(workers, "done", timeout_s=15)
        _, job_id, attempt, kind = line.split()
        assert kind == "succeeded"
        attempts[int(job_id)] = int(attempt)
    second.wait_ready()
    second.signal(signal.SIGTERM)
    assert second.wait() == 0
    # Then every job completed; the killed ones ran again as attempt 2
    assert {attempts[i] for i in endless} == {2}
    assert {attempts[i] for i in rest} == {1}
    for job_id in endless + rest:
        job = producer.get_job(job_id)
        assert job is not None and job.state is JobState.SUCCEEDED


def test_three_workers_on_one_store_run_600_jobs_each_once(
    durable_store_url: str, producer: rota.App, workers: Callable[..., Worker], tmp_path: Path
) -> None:
    # Given three worker processes running on one store
    log = tmp_path / "executions.log"
    started = [workers(durable_store_url, ROTA_TEST_POOL="8", ROTA_TEST_LOG=str(log))
               for _ in range(3)]
    for worker in started:
        worker.wait_ready()
    # When 600 jobs are enqueued and they drain the Queue
    ids = enqueue(producer, list(range(600)))
    done: set[int] = set()
    by_pid: Counter[int] = Counter()
    while len(done) < 600:
        try:
            pid, line = next_line(workers, "done", timeout_s=30)
        except queue.Empty:
            for worker in started:
                worker.signal(signal.SIGKILL)
            pytest.fail(f"{len(done)} of 600 done; workers said: "
                        + " | ".join(worker.stderr() for worker in started))
        done.add(int(line.split()[1]))
        by_pid[pid] += 1
    for worker in started:
        worker.signal(signal.SIGTERM)
    assert [worker.wait() for worker in started] == [0, 0, 0], started[0].stderr()
    # Then each job ran exactly once, all succeeded, and the work was shared
    runs = Counter(int(line.split()[0]) for line in log.read_text().splitlines())
    assert runs == Counter(range(600))
    assert all(producer.get_job(i).state is JobState.SUCCEEDED for i in ids)  # type: ignore[union-attr]
    assert len(by_pid) >= 2


def test_an_enqueue_from_another_process_wakes_an_idle_worker_at_once(
    durable_store_url: str, workers: Callable[..., Worker]
) -> None:
    # Given an idle worker that polls only every 5 s
    worker = workers(durable_store_url, ROTA_TEST_POLL_S="5")
    worker.wait_ready()
    producer = rota.App(durable_store_url)
    producer.job("work")(lambda n: None)
    try:
        # When another process enqueues a job
        began = time.monotonic()
        enqueue(producer, [0])
        next_line(workers, "start", timeout_s=5)
        latency = time.monotonic() - began
    finally:
        producer.close()
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0
    # Then the wake-up hint (PostgreSQL LISTEN/NOTIFY; SQLite's data_version watcher)
    # reaches the worker well within a second, not at its next poll
    assert latency < 1.0, f"pickup took {latency:.2f} s"
