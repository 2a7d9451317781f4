"""Four worker processes on one SQLite file while another process keeps enqueueing.

The guarantee (docs/reliability.md): SQLite is safe for many processes on one host: each
job is leased to one process at a time, so without crashes each runs exactly once, and
no process ever fails with "database is locked".
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import rota
from rota.core.jobs import JobState
from tests.chaos.conftest import Supervisor, chaos_env, state_counts
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

PROCESSES = 4
BATCHES = 40
BATCH = 50
DEADLINE_S = 180


def test_four_processes_and_a_concurrent_enqueuer_run_each_job_once(
    tmp_path: Path, supervisors: Callable[..., Supervisor],
    chaos_figures: Callable[..., None],
) -> None:
    # Given four workers (pool 4) on one SQLite file
    store_url = f"sqlite:///{tmp_path / 'rota.db'}"
    log = tmp_path / "executions.log"
    producer = rota.App(store_url)
    try:
        producer.job("work")(lambda n: None)
        supervisor = supervisors(chaos_env(store_url, log, ROTA_CHAOS_JOB_S="0.005",
                                           ROTA_CHAOS_LEASE_S="30"), PROCESSES)
        for worker in supervisor.workers:
            worker.wait_ready()
        # When this process enqueues 2,000 jobs in 40 batches while they drain
        began = time.monotonic()
        for batch in range(BATCHES):
            producer.jobs["work"].enqueue_many(
                [(n,) for n in range(batch * BATCH, (batch + 1) * BATCH)]
            )
        total = BATCHES * BATCH
        assert wait_until(lambda: state_counts(producer)[JobState.SUCCEEDED] == total,
                          DEADLINE_S), supervisor.stderr()
        drained_s = time.monotonic() - began
        assert supervisor.stop() == [0] * PROCESSES, supervisor.stderr()
        counts = state_counts(producer)
    finally:
        producer.close()
    # Then every job ran exactly once, spread over the processes, and no process ever
    # reported a locked database
    lines = log.read_text().splitlines()
    runs = Counter(int(line.split()[0]) for line in lines)
    by_process = Counter(line.split()[1] for line in lines)
    locked = sum(w.stderr().count("database is locked") for w in supervisor.all_workers)
    chaos_figures(
        "sqlite-processes", processes=PROCESSES, jobs=total,
        duplicates=sum(1 for count in runs.values() if count > 1),
        lost=total - len(runs), locked_errors=locked,
        per_process=sorted(by_process.values()), drain_s=round(drained_s, 1),
    )
    assert counts[JobState.SUCCEEDED] == total and counts[JobState.LEASED] == 0
    assert runs == Counter(range(total))
    assert locked == 0
    assert len(by_process) >= 2
