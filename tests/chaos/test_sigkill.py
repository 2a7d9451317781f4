"""Repeated SIGKILL mid-drain, on SQLite and PostgreSQL, with a supervisor restarting.

The guarantee (docs/reliability.md): a crash at any point loses nothing; a job runs more
than once only if it was in flight (leased to the killed process) at a kill; nothing stays
leased once the survivors have swept the dead process's leases.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass
class Kill:
    at: float  # time.monotonic() of the SIGKILL
    pid: int
    in_flight: set[int]  # job ids leased to the process when it died
    swept_at: float | None = None  # when no job was leased to it any more

    def owns(self, lease_owner: str | None) -> bool:
        return lease_owner is not None and f":{self.pid}:" in lease_owner


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
    kills: list[Kill] = []
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
            kill = Kill(time.monotonic(), victim.pid, set())
            supervisor.kill(victim)
            kill.in_flight = {job.id for job in producer.store.list_jobs(
                state=JobState.LEASED, limit=10_000) if kill.owns(job.lease_owner)}
            kills.append(kill)
            outcomes_since_kill = 0
        if time.monotonic() >= next_check:
            supervisor.check()
            unswept = [kill for kill in kills if kill.swept_at is None]
            if unswept:
                leased = producer.store.list_jobs(state=JobState.LEASED, limit=10_000)
                for kill in unswept:
                    # A claim statement running at the kill may still commit on the
                    # PostgreSQL server after the client died: its jobs are in flight too.
                    held = {job.id for job in leased if kill.owns(job.lease_owner)}
                    kill.in_flight |= held
                    if not held:
                        kill.swept_at = time.monotonic()
            done = state_counts(producer)[JobState.SUCCEEDED] == JOBS
            next_check = time.monotonic() + 0.25
    drained_s = time.monotonic() - began
    assert supervisor.stop() == [0] * WORKERS, supervisor.stderr()

    # Then every job succeeded, none is left leased, each ran at least once (nothing lost),
    # and every job that ran twice was in flight at one of the kills
    counts = state_counts(producer)
    runs = executions(log)
    in_flight_ever = set().union(*(kill.in_flight for kill in kills))
    duplicates = {job_id for job_id, n in number_of.items() if runs.get(n, 0) > 1}
    lost = [job_id for job_id, n in number_of.items() if runs.get(n, 0) == 0]
    # Recovery: from a kill until the survivors had swept every lease of the dead process
    # (lease expiry + sweep), and until each job in flight at it had succeeded again
    # (a swept job rejoins its Queue behind the backlog, so this one includes queueing).
    sweep_s = [(kill.swept_at or kill.at) - kill.at for kill in kills]
    rerun_s = [
        max((min((t for t in first_success.get(j, []) if t > kill.at), default=kill.at)
             - kill.at for j in kill.in_flight), default=0.0)
        for kill in kills
    ]
    chaos_figures(
        f"sigkill[{durable_store_url.split(':')[0]}]", jobs=JOBS, kills=len(kills),
        restarts=supervisor.restarts + len(kills), in_flight_at_kills=len(in_flight_ever),
        duplicates=len(duplicates), lost=len(lost),
        executions=sum(runs.values()),
        max_recovery_s=round(max(sweep_s, default=0), 2),
        mean_recovery_s=round(sum(sweep_s) / max(len(sweep_s), 1), 2),
        max_rerun_s=round(max(rerun_s, default=0), 2),
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
