"""Workflows under crashes, on SQLite and PostgreSQL, with real `rota worker` processes.

The guarantees (docs/workflows.md): a child is released in the transaction that finishes
its last parent, so SIGKILLs at any point neither lose a child (none stays waiting) nor
release it early or twice; it runs after all its parents, and more than once only if it was
in flight at a kill, like any job. A parent dead-lettered mid-workflow (here: by the lease
sweeper, after it killed its own worker each attempt) cancels its children, naming it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

import rota
from rota.core.jobs import JobRecord, JobState
from tests.chaos.conftest import Supervisor, all_jobs, chaos_env, executions, state_counts

pytestmark = pytest.mark.slow

FAN_INS = 10
PARENTS = 40  # per fan-in
CHAINS = 10
LINKS = 6
KILLS = 6
WORKERS = 2
DEADLINE_S = 180  # generous: the drain takes ~10-30 s on a loaded 2-core machine
UNFINISHED = (JobState.WAITING, JobState.SCHEDULED, JobState.LEASED)
# Each worker takes `now` from its own reading of the store's clock: two of them may
# disagree by a few milliseconds, and a child is due at the `now` of the parent that
# released it, which may be a hair before the `finished_at` another worker wrote.
CLOCKS_AGREE_WITHIN = timedelta(milliseconds=200)


def _unfinished(app: rota.App) -> int:
    counts = state_counts(app)
    return sum(counts[state] for state in UNFINISHED)


def test_sigkill_during_fan_ins_and_chains_releases_every_child_once_after_its_parents(
    durable_store_url: str, producer: rota.App, supervisors: Callable[..., Supervisor],
    tmp_path: Path, chaos_figures: Callable[..., None],
) -> None:
    # Given 10 fan-ins of 40 parents each into one child, and 10 chains of 6 links, all of
    # 20 ms jobs, and two workers (pool 4, lease 3 s) under a supervisor
    log = tmp_path / "executions.log"
    work = producer.jobs["work"]
    number = 0
    children: dict[int, int] = {}  # child id -> its n
    n_of: dict[int, int] = {}  # every job id -> its n
    for _ in range(FAN_INS):
        parents = work.enqueue_many([(n,) for n in range(number, number + PARENTS)])
        n_of.update(zip(parents, range(number, number + PARENTS), strict=True))
        number += PARENTS
        children[work.configure(after=parents).enqueue(number)] = number
        number += 1
    for _ in range(CHAINS):
        link = work.enqueue(number)
        n_of[link] = number
        number += 1
        for _ in range(LINKS - 1):
            link = work.configure(after=[link]).enqueue(number)
            children[link] = number
            number += 1
    n_of.update(children)
    total = number
    supervisor = supervisors(chaos_env(durable_store_url, log, ROTA_CHAOS_JOB_S="0.02",
                                       ROTA_CHAOS_LEASE_S="3"), WORKERS)
    # When the busy worker is SIGKILLed every ~50 outcomes, 6 times, restarted at once,
    # until no job is left unfinished
    kills = 0
    in_flight: set[int] = set()
    since_kill = 0
    busy_pid = 0
    began = time.monotonic()
    while _unfinished(producer):
        assert time.monotonic() - began < DEADLINE_S, (
            f"not done after {DEADLINE_S} s: {state_counts(producer)}\n{supervisor.stderr()}")
        supervisor.check()
        line = supervisor.next_line(0.1)
        if line is None:
            continue
        words = line.text.split()
        if words[0] == "start":
            busy_pid = line.pid
        elif words[0] == "done":
            since_kill += 1
        victim = next((w for w in supervisor.workers if w.pid == busy_pid), None)
        if kills < KILLS and since_kill >= 50 and victim is not None and victim.alive():
            supervisor.kill(victim)
            in_flight |= {job.id for job in producer.store.list_jobs(
                state=JobState.LEASED, limit=10_000)
                if job.lease_owner is not None and f":{victim.pid}:" in job.lease_owner}
            kills += 1
            since_kill = 0
    took_s = time.monotonic() - began
    assert supervisor.stop() == [0] * WORKERS, supervisor.stderr()

    # Then every job succeeded, no child waits, each child was released only after its
    # last parent finished and started after that (by the side record's order, and by the
    # store's times), and ran more than once only if it was in flight at a kill
    jobs = {job.id: job for job in all_jobs(producer)}
    runs = executions(log)
    # The side record's lines are in real time order (one O_APPEND write each): where
    # each n first finished running
    first_line: dict[int, int] = {}
    for index, line in enumerate(log.read_text().splitlines()):
        first_line.setdefault(int(line.split()[0]), index)
    chaos_figures(
        f"workflow-sigkill[{durable_store_url.split(':')[0]}]", jobs=total,
        children=len(children), kills=kills,
        child_duplicates=sum(runs.get(n, 0) > 1 for n in children.values()),
        children_never_run=sum(n not in runs for n in children.values()),
        took_s=round(took_s, 1),
    )
    assert kills == KILLS
    assert {job.state for job in jobs.values()} == {JobState.SUCCEEDED}
    assert len(jobs) == total
    for child_id, n in children.items():
        child = jobs[child_id]
        parents: list[JobRecord] = [jobs[parent] for parent in child.parents]
        last_parent_end = max(parent.finished_at for parent in parents
                              if parent.finished_at is not None)
        assert child.due_at >= last_parent_end - CLOCKS_AGREE_WITHIN, (
            child_id, child.due_at, last_parent_end)
        assert child.started_at is not None
        assert child.started_at >= last_parent_end - CLOCKS_AGREE_WITHIN
        assert runs.get(n, 0) >= 1, f"child {child_id} never ran"
        assert first_line[n] > max(first_line[n_of[parent]] for parent in child.parents)
        if runs[n] > 1:
            assert child_id in in_flight, f"child {child_id} ran {runs[n]} times"


def test_a_parent_dead_lettered_mid_workflow_cancels_its_children_with_the_reason(
    durable_store_url: str, producer: rota.App, supervisors: Callable[..., Supervisor],
    tmp_path: Path, chaos_figures: Callable[..., None],
) -> None:
    # Given a workflow: a healthy first step, then a poison step (it kills its worker
    # each attempt) after it, then two children of the poison step (one needing it to
    # succeed, one running whatever happened) and a grandchild of the first child
    log = tmp_path / "executions.log"
    work, poison = producer.jobs["work"], producer.jobs["poison"]
    first = work.enqueue(0)
    middle = poison.configure(after=[first]).enqueue()
    needs_success = work.configure(after=[middle]).enqueue(1)
    grandchild = work.configure(after=[needs_success]).enqueue(2)
    anyway = work.configure(after=[middle], after_outcome="finished").enqueue(3)
    # When one worker (lease 1 s, max_attempts 2) runs it under a supervisor that restarts
    # it after each crash, until nothing is left to run
    supervisor = supervisors(chaos_env(durable_store_url, log, ROTA_CHAOS_LEASE_S="1",
                                       ROTA_CHAOS_MAX_ATTEMPTS="2"), 1)
    began = time.monotonic()
    while _unfinished(producer):
        assert time.monotonic() - began < DEADLINE_S, (
            f"{state_counts(producer)}\n{supervisor.stderr()}")
        supervisor.check()
        supervisor.next_line(0.1)
    took_s = time.monotonic() - began
    assert supervisor.stop() == [0], supervisor.stderr()

    # Then the poison step is dead-lettered after 2 crashes, its child and grandchild are
    # cancelled naming their parents, and the "finished" child ran
    jobs = {job.id: job for job in all_jobs(producer)}
    runs = executions(log)
    chaos_figures(f"workflow-dead-letter[{durable_store_url.split(':')[0]}]",
                  crashes=supervisor.restarts, took_s=round(took_s, 1))
    assert jobs[first].state is JobState.SUCCEEDED
    assert (jobs[middle].state, jobs[middle].attempt) == (JobState.DEAD_LETTERED, 2)
    for job_id, parent, how in ((needs_success, middle, "dead_lettered"),
                                (grandchild, needs_success, "cancelled")):
        job = jobs[job_id]
        assert job.state is JobState.CANCELLED
        assert job.last_error is not None
        assert f"parent job {parent} ended {how}" in job.last_error
    assert jobs[anyway].state is JobState.SUCCEEDED
    assert sorted(runs) == [0, 3]
