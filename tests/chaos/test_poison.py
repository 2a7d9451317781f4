"""The poison job: one handler that kills its own process, among healthy jobs.

The guarantee (docs/reliability.md): a job that crashes its worker process is retried up
to `max_attempts` like any failure and then dead-lettered, alone: the healthy jobs that
shared a process with it all succeed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

import rota
from rota.core.jobs import JobState
from tests.chaos.conftest import Supervisor, all_jobs, chaos_env, executions, state_counts

pytestmark = pytest.mark.slow

HEALTHY = 12
MAX_ATTEMPTS = 4
DEADLINE_S = 120  # generous: ~4 crash cycles of a 1 s lease and a worker start


def test_a_job_that_kills_its_process_is_dead_lettered_alone(
    durable_store_url: str, producer: rota.App, supervisors: Callable[..., Supervisor],
    tmp_path: Path, chaos_figures: Callable[..., None],
) -> None:
    # Given 12 healthy jobs with one poison job (os._exit(1)) in their midst, and one
    # worker (pool 4, lease 1 s, max_attempts 4, no backoff) under a supervisor
    log = tmp_path / "executions.log"
    healthy = producer.jobs["work"].enqueue_many([(n,) for n in range(HEALTHY // 2)])
    poison_id = producer.jobs["poison"].enqueue()
    healthy += producer.jobs["work"].enqueue_many([(n,) for n in range(HEALTHY // 2, HEALTHY)])
    supervisor = supervisors(chaos_env(
        durable_store_url, log, ROTA_CHAOS_POOL="4", ROTA_CHAOS_LEASE_S="1",
        ROTA_CHAOS_MAX_ATTEMPTS=str(MAX_ATTEMPTS), ROTA_CHAOS_JOB_S="0.05",
    ), 1)
    # When the worker crashes on the poison job and is restarted each time, until no job
    # is left to run
    began = time.monotonic()
    while True:
        supervisor.check()
        counts = state_counts(producer)
        if counts[JobState.SCHEDULED] == 0 and counts[JobState.LEASED] == 0:
            break
        assert time.monotonic() - began < DEADLINE_S, f"{counts}\n{supervisor.stderr()}"
        supervisor.next_line(0.1)  # paces the loop; lines are not needed here
    took_s = time.monotonic() - began
    assert supervisor.stop() == [0], supervisor.stderr()

    # Then only the poison job is dead-lettered, after max_attempts crashes, and every
    # healthy job succeeded
    jobs = {job.id: job for job in all_jobs(producer)}
    runs = executions(log)
    dead = sorted(i for i, job in jobs.items() if job.state is JobState.DEAD_LETTERED)
    chaos_figures(
        f"poison[{durable_store_url.split(':')[0]}]", jobs=HEALTHY + 1,
        crashes=supervisor.restarts, dead_lettered=len(dead),
        healthy_succeeded=sum(jobs[i].state is JobState.SUCCEEDED for i in healthy),
        healthy_duplicates=sum(1 for count in runs.values() if count > 1),
        healthy_never_completed=sum(1 for n in range(HEALTHY) if n not in runs),
        took_s=round(took_s, 1),
    )
    poison = jobs[poison_id]
    assert (poison.state, poison.attempt) == (JobState.DEAD_LETTERED, MAX_ATTEMPTS)
    assert dead == [poison_id], {i: (jobs[i].name, jobs[i].attempt) for i in dead}
    assert [jobs[i].state for i in healthy] == [JobState.SUCCEEDED] * HEALTHY
