"""Two real `rota worker` processes (two Apps) on one SQLite file and on one PostgreSQL
database fire a schedule each instant exactly once, over many instants.

The children print one line per tick run; the test waits on those lines (with deadlines),
then stops the workers and counts from the store. No timing assertion.
"""

from __future__ import annotations

import queue
import signal
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime

import pytest

import rota
from rota.store.base import ScheduleStore
from tests.worker.child_process import WorkerProcess

APP = "tests.worker.schedule_app:app"
INSTANTS = 15

pytestmark = pytest.mark.slow


@pytest.fixture
def lines() -> queue.Queue[tuple[int, str]]:
    return queue.Queue()


@pytest.fixture
def start_worker(
    durable_store_url: str, lines: queue.Queue[tuple[int, str]],
) -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    for _ in range(2):
        started.append(WorkerProcess(
            APP, {"ROTA_TEST_STORE": durable_store_url},
            lambda pid, text: lines.put((pid, text)), timeout_s=30))
    yield started
    for worker in started:
        worker.close()


def test_two_worker_processes_fire_each_instant_once(
    durable_store_url: str, start_worker: list[WorkerProcess],
    lines: queue.Queue[tuple[int, str]],
) -> None:
    # Given two worker processes of the same App (a schedule every second) on one store
    workers = start_worker
    for worker in workers:
        worker.wait_ready()
    # When they run until INSTANTS ticks ran
    seen: Counter[str] = Counter()
    deadline = time.monotonic() + 90
    while sum(seen.values()) < INSTANTS:
        try:
            _, line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            pytest.fail(f"{sum(seen.values())} ticks of {INSTANTS}; workers said: "
                        + " | ".join(worker.stderr() for worker in workers))
        if line.startswith("tick "):
            seen[line.split()[2]] += 1
    for worker in workers:
        worker.signal(signal.SIGTERM)
    assert [worker.wait() for worker in workers] == [0, 0], workers[0].stderr()
    # Then the store holds one job per instant fired: no instant twice, each a whole
    # second, due at it; and each ran once
    app = rota.App(durable_store_url)
    try:
        jobs = app.store.list_jobs(limit=10_000)
        due = [job.due_at for job in jobs]
        assert len(due) == len(set(due)) >= INSTANTS
        assert all(at.microsecond == 0 for at in due)
        assert all(count == 1 for count in seen.values())
        assert {datetime.fromisoformat(at) for at in seen} <= set(due)
        store = app.store
        assert isinstance(store, ScheduleStore)
        (row,) = store.list_schedules()
        assert row.last_fire_at == max(due)
        assert all(at > row.registered_at for at in due)
    finally:
        app.close()
    # and every job there was fired by one of the two (their logs name each fire made)
    fires = [worker.stderr().count("fired job") for worker in workers]
    assert sum(fires) == len(due)
