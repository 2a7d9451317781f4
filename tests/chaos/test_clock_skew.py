"""Machines whose clocks disagree, up to 10 minutes either way, agree through the store.

Real `rota worker` processes (and an enqueuing process) run under libfaketime
(`LD_PRELOAD=libfaketime.so.1 FAKETIME=+120s`, the monotonic clock left alone) against
one PostgreSQL store, whose server clock is the truth. The guarantees (docs/worker.md,
"Many machines and their clocks"): a worker whose clock runs ahead never takes a live lease
and never runs a job before its due time by the store's clock; a job enqueued "now" on a
fast or slow machine is due now; schedules fire once per instant, at the store's time;
retention deletes by the store's time. Each scenario first checks that the skew took
effect (the worker's registry row shows the offset it measured), so it cannot pass by
accident. SQLite has no server clock (its processes share their host's), so there the same
code path runs with the host clock and must simply not break.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import rota
from rota.core.jobs import JobState
from tests.chaos.conftest import (
    REQUIRE_POSTGRES,
    Supervisor,
    all_jobs,
    chaos_env,
    executions,
)
from tests.conftest import _fresh_store_url
from tests.waiting import wait_until
from tests.worker.child_process import ROOT, WorkerProcess

pytestmark = pytest.mark.slow

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
DEADLINE_S = 60.0  # generous: a loaded 2-core machine


@pytest.fixture
def pg_store_url(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from _fresh_store_url("postgres", request)


def skewed(offset_s: int) -> dict[str, str]:
    """Environment that makes a child's wall clock run `offset_s` off (monotonic kept)."""
    if not LIBFAKETIME.exists():
        reason = f"libfaketime is not installed ({LIBFAKETIME}; Debian package faketime)"
        if REQUIRE_POSTGRES:
            pytest.fail(f"{reason}; .ci/run installs it")
        pytest.skip(reason)
    if offset_s == 0:
        return {}
    return {"LD_PRELOAD": str(LIBFAKETIME), "FAKETIME": f"{offset_s:+d}s",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def store_now(app: rota.App) -> datetime:
    """The store's clock (PostgreSQL's server time) read from the test."""
    answer = app.store.store_time()
    assert answer is not None
    return answer


def the_worker(app: rota.App, pid: int) -> rota.WorkerInfo:
    def found() -> rota.WorkerInfo | None:
        return next((w for w in app.workers() if w.pid == pid), None)

    assert wait_until(lambda: found() is not None, DEADLINE_S), f"{pid} never registered"
    worker = found()
    assert worker is not None
    return worker


def assert_skew_took_effect(app: rota.App, worker: WorkerProcess, offset_s: int) -> None:
    """The worker measured its clock `offset_s` off the store's, and said so once."""
    measured = the_worker(app, worker.pid).clock_offset
    assert abs(measured - timedelta(seconds=offset_s)) < timedelta(seconds=2), measured
    warnings = [line for line in worker.stderr().splitlines()
                if "this machine's clock runs" in line]
    if abs(offset_s) > 1:
        direction = "ahead of" if offset_s > 0 else "behind"
        assert len(warnings) == 1 and f"s {direction} the store's" in warnings[0], warnings
    else:
        assert warnings == []


@pytest.mark.parametrize("offset_s", [120, 600])
def test_a_fast_worker_never_takes_a_live_lease(
    pg_store_url: str, supervisors: Callable[..., Supervisor], tmp_path: Path,
    chaos_figures: Callable[..., None], offset_s: int,
) -> None:
    # Given an honest worker running four 6-second jobs (lease 3 s, renewed by heartbeats)
    log = tmp_path / "executions.log"
    producer = rota.App(pg_store_url)
    producer.job("work")(lambda n: None)
    producer.jobs["work"].enqueue_many([(n,) for n in range(4)])
    env = chaos_env(pg_store_url, log, ROTA_CHAOS_JOB_S="6", ROTA_CHAOS_LEASE_S="3")
    honest = supervisors(env, 1)
    started = set()
    while len(started) < 4:
        line = honest.next_line(DEADLINE_S)
        assert line is not None, honest.stderr()
        if line.text.startswith("start "):
            started.add(line.text)
    # When a worker whose clock runs `offset_s` ahead starts beside it, while they run
    fast = supervisors({**env, **skewed(offset_s)}, 1)
    assert_skew_took_effect(producer, fast.workers[0], offset_s)
    # (The side record is written by the handler, before its outcome reaches the store.)
    assert wait_until(lambda: all(job.state is JobState.SUCCEEDED
                                  for job in all_jobs(producer)), DEADLINE_S), "unfinished"
    # Then every job ran exactly once, on the honest worker, in its first attempt
    runs = executions(log)
    jobs = all_jobs(producer)
    assert runs == {0: 1, 1: 1, 2: 1, 3: 1}, runs
    assert all(job.state is JobState.SUCCEEDED and job.attempt == 1 for job in jobs), jobs
    chaos_figures("fast worker beside live leases", offset_s=offset_s, jobs=4,
                  executions=sum(runs.values()), duplicates=sum(runs.values()) - 4)
    producer.close()


@pytest.mark.parametrize("offset_s", [120, 600])
def test_a_fast_worker_never_runs_a_job_before_it_is_due(
    pg_store_url: str, supervisors: Callable[..., Supervisor], tmp_path: Path,
    chaos_figures: Callable[..., None], offset_s: int,
) -> None:
    # Given a job due in 60 s by the store's clock, and one due now
    log = tmp_path / "executions.log"
    producer = rota.App(pg_store_url)
    producer.job("work")(lambda n: None)
    later = producer.jobs["work"].configure(delay=60).enqueue(1)
    now = producer.jobs["work"].enqueue(0)
    # When a worker whose clock runs `offset_s` ahead (past the later job's due time) serves
    fast = supervisors({**chaos_env(pg_store_url, log), **skewed(offset_s)}, 1)
    assert_skew_took_effect(producer, fast.workers[0], offset_s)
    assert wait_until(lambda: getattr(producer.get_job(now), "state", None)
                      is JobState.SUCCEEDED, DEADLINE_S), "the due job never ran"
    # Then it ran the job due now, and a few of its polls later the other is still waiting
    time_seen = store_now(producer)
    assert wait_until(lambda: store_now(producer) - time_seen > timedelta(seconds=2),
                      DEADLINE_S)
    job = producer.get_job(later)
    assert job is not None and job.state is JobState.SCHEDULED and job.attempt == 0, job
    assert executions(log) == {0: 1}
    done = producer.get_job(now)
    assert done is not None and done.state is JobState.SUCCEEDED
    chaos_figures("fast worker and a job due later", offset_s=offset_s, early_runs=0)
    producer.close()


def enqueue_from_a_skewed_process(store_url: str, offset_s: int) -> int:
    """Enqueue `work(0)` "now" from a separate process whose clock runs `offset_s` off.

    The script closes its App: left to the pool's finalizer at exit, psycopg_pool waits
    up to 5 s for its worker threads, and under faketime a timed wait computed on the
    faked wall clock runs `offset_s` longer (a +600 s machine hung past the timeout)."""
    script = ("import rota, sys\n"
              "app = rota.App(sys.argv[1])\n"
              "app.job('work')(lambda n: None)\n"
              "print(app.jobs['work'].enqueue(0))\n"
              "app.close()\n")
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", **skewed(offset_s)}
    done = subprocess.run([sys.executable, "-c", script, store_url], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 0, done.stderr
    assert ("this machine's clock runs" in done.stderr) == (abs(offset_s) > 1), done.stderr
    return int(done.stdout.strip())


@pytest.mark.parametrize("offset_s", [-600, -120, 120, 600])
def test_a_job_enqueued_now_on_a_skewed_machine_is_due_now(
    pg_store_url: str, supervisors: Callable[..., Supervisor], tmp_path: Path,
    chaos_figures: Callable[..., None], offset_s: int,
) -> None:
    # Given a machine whose clock runs `offset_s` off
    producer = rota.App(pg_store_url)
    # When it enqueues a job "now"
    before = store_now(producer)
    job_id = enqueue_from_a_skewed_process(pg_store_url, offset_s)
    after = store_now(producer)
    # Then the job is due now by the store's clock
    job = producer.get_job(job_id)
    assert job is not None
    assert before - timedelta(seconds=1) <= job.due_at <= after + timedelta(seconds=1), (
        job.due_at, before, after)
    # And an honest worker runs it at once (not `offset_s` later)
    log = tmp_path / "executions.log"
    supervisors(chaos_env(pg_store_url, log), 1)
    assert wait_until(lambda: executions(log).get(0) == 1, DEADLINE_S), "the job never ran"
    chaos_figures("enqueue now on a skewed machine", offset_s=offset_s,
                  due_off_store_s=round((job.due_at - before).total_seconds(), 3))
    producer.close()


def test_schedules_fire_once_per_instant_at_the_stores_time(
    pg_store_url: str, chaos_figures: Callable[..., None],
) -> None:
    # Given two workers of an App with a schedule every second, one machine 5 minutes
    # ahead and one 5 minutes behind
    lines: list[tuple[int, str]] = []
    env = {"ROTA_TEST_STORE": pg_store_url}
    producer = rota.App(pg_store_url)
    workers = [WorkerProcess("tests.worker.schedule_app:app", {**env, **skewed(offset)},
                             lambda pid, text: lines.append((pid, text)))
               for offset in (300, -300)]
    try:
        for worker, offset in zip(workers, (300, -300), strict=True):
            worker.wait_ready()
            assert_skew_took_effect(producer, worker, offset)
        # When they run for a few seconds of the store's time
        start = store_now(producer)
        assert wait_until(lambda: sum(text.startswith("tick ") for _, text in lines) >= 6,
                          DEADLINE_S), "the schedule never fired"
        end = store_now(producer)
    finally:
        for worker in workers:
            worker.close()
    # Then every instant fired once, and every instant is the store's time, not 5 min off
    instants = [text.split()[2] for _, text in lines if text.startswith("tick ")]
    assert len(instants) == len(set(instants)), instants
    fired = [datetime.fromisoformat(at) for at in instants]
    assert all(start - timedelta(seconds=3) <= at <= end + timedelta(seconds=1)
               for at in fired), (start, end, fired)
    chaos_figures("schedule on skewed machines", offsets_s="+300,-300", fired=len(fired),
                  duplicates=len(instants) - len(set(instants)))
    producer.close()


def test_retention_deletes_by_the_stores_time(
    pg_store_url: str, supervisors: Callable[..., Supervisor],
    chaos_figures: Callable[..., None],
) -> None:
    # Given a job that finished 6 minutes ago and one that finished just now, by the
    # store's clock, and a retention of 5 minutes for succeeded jobs
    producer = rota.App(pg_store_url)
    now = store_now(producer)
    ids = {}
    for name, at in (("old", now - timedelta(minutes=6)), ("fresh", now)):
        # (A virtual clock is never corrected: these jobs finish exactly at `at`.)
        back_then = rota.App(pg_store_url, clock=rota.VirtualClock(at), retention=None)
        back_then.job("work")(lambda n: None)
        back_then.add_worker_group(rota.WorkerGroupOptions(
            name="main", policy=rota.Strict("default"), pool_size=1))
        ids[name] = back_then.jobs["work"].enqueue(0)
        back_then.run_until_idle()
        back_then.close()
    finished = {name: producer.get_job(job_id) for name, job_id in ids.items()}
    assert all(job is not None and job.state is JobState.SUCCEEDED
               for job in finished.values()), finished
    # When a worker whose clock runs 10 minutes ahead sweeps (it sweeps at start)
    fast = supervisors({**chaos_env(pg_store_url, ROTA_CHAOS_RETENTION_S="300"),
                        **skewed(600)}, 1)
    assert_skew_took_effect(producer, fast.workers[0], 600)
    assert wait_until(lambda: producer.get_job(ids["old"]) is None, DEADLINE_S), "never deleted"
    # Then the job finished 6 minutes ago is gone, the one finished now is kept (a clock
    # 10 minutes ahead would have deleted both in the same sweep)
    assert producer.get_job(ids["fresh"]) is not None
    chaos_figures("retention on a fast machine", offset_s=600, deleted="old", kept="fresh")
    producer.close()
