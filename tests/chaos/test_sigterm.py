"""SIGTERM with a grace period shorter than the running jobs, on SQLite and PostgreSQL.

The guarantee (docs/reliability.md): a graceful stop hands the jobs still running after
the grace period back to their Queues at once, their attempt not counted; they run later
elsewhere, and nothing is lost.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import rota
from rota.core.jobs import JobState
from tests.chaos.conftest import (
    Supervisor,
    all_jobs,
    chaos_env,
    executions,
    state_counts,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

JOBS = 12
POOL = 4
SIGTERMS = 2
DEADLINE_S = 60


def test_sigterm_hands_back_jobs_longer_than_the_grace_with_their_attempt_unchanged(
    durable_store_url: str, producer: rota.App, supervisors: Callable[..., Supervisor],
    tmp_path: Path, chaos_figures: Callable[..., None],
) -> None:
    # Given 12 jobs of 30 s each
    log = tmp_path / "executions.log"
    ids = producer.jobs["work"].enqueue_many([(n,) for n in range(JOBS)])
    handed_back = 0
    shutdown_s: list[float] = []
    for _ in range(SIGTERMS):
        # When a worker (pool 4, grace 0.3 s) has started 4 of them and gets SIGTERM
        supervisor = supervisors(chaos_env(durable_store_url, log, ROTA_CHAOS_JOB_S="30",
                                           ROTA_CHAOS_POOL=str(POOL)), 1, "--grace", "0.3")
        (worker,) = supervisor.workers
        started = 0
        deadline = time.monotonic() + DEADLINE_S
        while started < POOL:
            assert time.monotonic() < deadline, supervisor.stderr()
            line = supervisor.next_line(0.5)
            started += line is not None and line.text.startswith("start")
        signalled = time.monotonic()
        worker.signal(signal.SIGTERM)
        # Then it exits 0 after the grace period, handing the 4 running jobs back: every
        # job is scheduled again, none leased, none counted as an attempt, none run
        assert worker.wait() == 0, worker.stderr()
        shutdown_s.append(time.monotonic() - signalled)
        supervisor.workers.clear()
        jobs = all_jobs(producer)
        assert [(job.state, job.attempt) for job in jobs] == [(JobState.SCHEDULED, 0)] * JOBS
        handed_back += POOL
    assert executions(log) == {}

    # And a worker where the jobs are quick runs every one of them once, as attempt 1
    drainer = supervisors(chaos_env(durable_store_url, log, ROTA_CHAOS_JOB_S="0"), 1)
    assert wait_until(lambda: state_counts(producer)[JobState.SUCCEEDED] == JOBS,
                      DEADLINE_S, tick=drainer.check), drainer.stderr()
    assert drainer.stop() == [0], drainer.stderr()
    runs = executions(log)
    chaos_figures(
        f"sigterm[{durable_store_url.split(':')[0]}]", jobs=JOBS, sigterms=SIGTERMS,
        grace_s=0.3, handed_back=handed_back,
        max_shutdown_s=round(max(shutdown_s), 2),
        duplicates=sum(1 for count in runs.values() if count > 1),
        lost=sum(1 for n in range(JOBS) if n not in runs),
    )
    assert runs == dict.fromkeys(range(JOBS), 1)
    assert [(job.state, job.attempt) for job in all_jobs(producer)] == [
        (JobState.SUCCEEDED, 1)
    ] * len(ids)
