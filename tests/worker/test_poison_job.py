"""A handler that kills its process (os._exit, a segfault, the OOM killer) is dead-lettered
alone: the jobs that shared the process with it are not charged for its crashes.

Real `rota worker` processes and a supervisor loop that restarts the worker after each
death, as systemd or Kubernetes would. The test polls the store with a generous deadline;
it never sleeps to wait for a condition.
"""

from __future__ import annotations

import queue
import subprocess
import time
from collections.abc import Iterator

import pytest

import rota
from rota.core.jobs import JobState
from tests.worker.test_worker_process import Worker

pytestmark = pytest.mark.slow

HEALTHY_S_MARKER = 1_000_000  # process_app's work(n) sleeps 0.3 s for n >= this


@pytest.fixture
def producer(durable_store_url: str) -> Iterator[rota.App]:
    app = rota.App(durable_store_url)
    app.job("work")(lambda n: None)
    app.job("poison")(lambda: None)
    yield app
    app.close()


def test_a_job_that_kills_its_process_is_dead_lettered_alone(
    durable_store_url: str, producer: rota.App
) -> None:
    # Given 12 healthy jobs (0.3 s each) and one poison job among them, placed so that the
    # first claim of a pool of 4 runs it beside three healthy ones
    healthy = producer.jobs["work"].enqueue_many(
        [(HEALTHY_S_MARKER + n,) for n in range(2)])
    poison_id = producer.jobs["poison"].enqueue()
    healthy += producer.jobs["work"].enqueue_many(
        [(HEALTHY_S_MARKER + n,) for n in range(2, 12)])
    all_ids = [*healthy, poison_id]

    def all_finished() -> bool:
        jobs = [producer.get_job(job_id) for job_id in all_ids]
        return all(job is not None and job.state.finished for job in jobs)

    # When a supervisor runs `rota worker` (pool 4, lease 1 s, max_attempts 4) and
    # restarts it after every death, until every job has finished
    lines: queue.Queue[tuple[int, str]] = queue.Queue()
    started: list[Worker] = []
    deaths: list[int] = []
    deadline = time.monotonic() + 120
    try:
        while not all_finished():
            assert time.monotonic() < deadline, (
                f"not finished after {len(deaths)} deaths: "
                + repr([producer.get_job(i) for i in all_ids])
            )
            worker = Worker(durable_store_url, lines, ROTA_TEST_POOL="4",
                            ROTA_TEST_LEASE_S="1", ROTA_TEST_MAX_ATTEMPTS="4")
            started.append(worker)
            while not all_finished():
                try:
                    deaths.append(worker.process.wait(timeout=0.1))
                    break
                except subprocess.TimeoutExpired:
                    assert time.monotonic() < deadline, "the drain did not finish in time"
        survivor = started[-1]
        if survivor.process.poll() is None:
            survivor.signal(15)
            assert survivor.wait() == 0, survivor.stderr()
    finally:
        for worker in started:
            worker.close()

    # Then only the poison job is dead-lettered, after its 4 attempts, each of which killed
    # the worker; every healthy job succeeded
    poison = producer.get_job(poison_id)
    assert poison is not None
    assert (poison.state, poison.attempt) == (JobState.DEAD_LETTERED, 4)
    assert poison.last_error is not None and "LeaseExpired" in poison.last_error
    states = {job_id: producer.get_job(job_id) for job_id in healthy}
    assert {
        job_id: (job.state.value, job.attempt) if job is not None else None
        for job_id, job in states.items() if job is None or job.state is not JobState.SUCCEEDED
    } == {}
    assert deaths == [70] * 4, deaths
    charged = sum(job.attempt - 1 for job in states.values() if job is not None)
    print(f"\npoison job: {len(deaths)} worker deaths, {len(started)} worker starts; "
          f"healthy jobs: 12 succeeded, 0 dead-lettered, {charged} extra attempts charged "
          "by the crashes")
