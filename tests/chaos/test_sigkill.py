"""Repeated SIGKILL mid-drain, on SQLite and PostgreSQL, with a supervisor restarting.

The guarantee (docs/reliability.md): a crash at any point loses nothing; a job runs more
than once only if it was in flight (leased to the killed process) at a kill; nothing stays
leased once the survivors have swept the dead process's leases.
"""

from __future__ import annotations

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

pytestmark = pytest.mark.slow

JOBS = 1_000
KILLS = 8
WORKERS = 2
DEADLINE_S = 180  # generous: the drain takes ~10-30 s on a loaded 2-core machine


def test_repeated_sigkill_mid_drain_loses_nothing_and_duplicates_only_in_flight_jobs(
    durable_store_url: str, producer: rota.App, supervisors: Callable[..., Supervisor],
    tmp_path: Path, chaos_figures: Callable[..., None],
) -> None:
    # Given 1,000 jobs of 20 ms and two workers (pool 4, lease 3 s: a
    # loaded machine must not lose a lease to a late heartbeat) under a supervisor
    log = tmp_path / "executions.log"
    ids = producer.jobs["work"].enqueue_many([(n,) for n in range(JOBS)])
    number_of = {job_id: n for n, job_id in enumerate(ids)}
    supervisor = supervisors(chaos_env(durable_store_url, log, ROTA_CHAOS_JOB_S="0.02",
                                       ROTA_CHAOS_LEASE_S="3"), WORKERS)
    # When one of them is SIGKILLed every ~JOBS/(KILLS+2) outcomes, KILLS times, and
    # restarted at once, until every job has succeeded
    kill_every = JOBS // (KILLS + 2)
    kills: list[tuple[float, int, set[int]]] = []  # (when, pid, job ids leased to it)
    first_success: dict[int, list[float]] = {}
    busy_pid = 0
    outcomes_since_kill = 0
    began = time.monotonic()
    deadline = began + DEADLINE_S
    next_check = began
    done = False
    while not done:
        assert time.monotonic() < deadline, (
            f"not drained after {DEADLINE_S} s: {state_counts(producer)}\n{supervisor.stderr()}"
        )
        line = supervisor.next_line(0.1)
        if line is not None:
            words = line.text.split()
            if words[0] == "start":
                busy_pid = line.pid
            elif words[0] == "done":
                outcomes_since_kill += 1
                if words[3] == "succeeded":
                    first_success.setdefault(int(words[1]), []).append(line.at)
        victim = next((w for w in supervisor.workers if w.pid == busy_pid), None)
        if (len(kills) < KILLS and outcomes_since_kill >= kill_every and victim is not None
                and victim.alive()):
            killed_at = time.monotonic()
            supervisor.kill(victim)
            token = f":{victim.pid}:"
            in_flight = {job.id for job in producer.store.list_jobs(state=JobState.LEASED,
                                                                    limit=10_000)
                         if job.lease_owner is not None and token in job.lease_owner}
            kills.append((killed_at, victim.pid, in_flight))
            outcomes_since_kill = 0
        if time.monotonic() >= next_check:
            supervisor.check()
            done = state_counts(producer)[JobState.SUCCEEDED] == JOBS
            next_check = time.monotonic() + 0.25
    drained_s = time.monotonic() - began
    assert supervisor.stop() == [0] * WORKERS, supervisor.stderr()

    # Then every job succeeded, none is left leased, each ran at least once (nothing lost),
    # and every job that ran twice was in flight at one of the kills
    counts = state_counts(producer)
    runs = executions(log)
    in_flight_ever = set().union(*(jobs for _, _, jobs in kills))
    duplicates = {job_id for job_id, n in number_of.items() if runs.get(n, 0) > 1}
    lost = [job_id for job_id, n in number_of.items() if runs.get(n, 0) == 0]
    recovery_s = [
        max((min((t for t in first_success.get(j, []) if t > at), default=at) - at
             for j in jobs), default=0.0)
        for at, _, jobs in kills
    ]
    chaos_figures(
        f"sigkill[{durable_store_url.split(':')[0]}]", jobs=JOBS, kills=len(kills),
        restarts=supervisor.restarts + len(kills), in_flight_at_kills=len(in_flight_ever),
        duplicates=len(duplicates), lost=len(lost),
        executions=sum(runs.values()), max_recovery_s=round(max(recovery_s, default=0), 2),
        drain_s=round(drained_s, 1),
    )
    assert len(kills) == KILLS
    assert counts[JobState.SUCCEEDED] == JOBS
    assert counts[JobState.LEASED] == 0
    assert lost == []
    assert duplicates <= in_flight_ever, sorted(duplicates - in_flight_ever)
    # A job never leased to a killed process was claimed exactly once
    for job in all_jobs(producer):
        if job.id not in in_flight_ever:
            assert job.attempt == 1, (job.id, job.attempt)
