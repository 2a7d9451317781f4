"""A bad network between one worker and PostgreSQL, with real `rota worker` processes.

The guarantees (docs/reliability.md, "Network faults"): a worker cut off from its store,
or on a link that loses, resets or slows its connections, never runs a job at the same
time as another run of it, loses nothing, starts nothing before it is due by the store's
clock, keeps its leases on a link that is slow but working, reports its clock's offset
truthfully, and recovers by itself (same process) within seconds of the link coming back.

Each scenario runs two workers on a fresh database of the shared server: one direct, one
behind a `FaultProxy` (tests/chaos/fault_proxy.py) that misbehaves on command. Jobs are
`hold(n, seconds)` (chaos_app.py), each due at its own moment, and every run writes its
start and end to a side record, from which the scenario counts overlapping runs, early
starts and losses. "Recovery" is the time from the fault's end until the store holds an
outcome that the faulted worker wrote for a job it started after the fault.

Times are reported as figures; the bounds asserted on them are generous (a loaded 2-core
machine) and only tell "recovered by itself" from "did not".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

import rota
from rota.core.jobs import JobState
from rota.store import StoreError
from tests.chaos.conftest import (
    Run,
    Supervisor,
    chaos_env,
    hold_runs,
    overlapping_runs,
    raw_sql,
    state_counts,
)
from tests.chaos.fault_proxy import FaultProxy
from tests.conftest import POSTGRES_URL
from tests.pg import fresh_postgres_url
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

DEADLINE_S = 90  # generous: each scenario drains in ~15-30 s on a loaded 2-core machine
RECOVERY_BOUND_S = 10.0  # "within a few seconds of the heal", with room for the load
OFFSET_BOUND = timedelta(seconds=0.5)
# A worker's reading of the store's clock is true to within its round trip, which a loaded
# machine may stretch by a thread's wait for a core: a run this much before its due time
# is that noise; a clock taken from a skewed reading runs ahead by a good part of a second.
EARLY_NOISE_S = 0.02
POOL = 3
# What a worker logs when it loses a lease: taken over, not renewed in time, or found
# gone when its outcome was written.
LOST_LEASE = ("lost its lease", "not renewed in time", "lost the lease")


@pytest.fixture
def network_url(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from fresh_postgres_url(POSTGRES_URL, request.node.name)


@pytest.fixture
def proxy(network_url: str) -> Iterator[FaultProxy]:
    parts = urlsplit(network_url)
    with FaultProxy(parts.hostname or "127.0.0.1", parts.port or 5432) as proxy:
        yield proxy


def _through(url: str, proxy: FaultProxy) -> str:
    """`url` with its host and port replaced by the proxy's."""
    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{proxy.port}"))


@dataclass
class Scene:
    """Two workers (one behind the proxy, "faulted"; one direct) draining `hold` jobs, and
    what the test watches while they do. The faulted worker starts first; the test starts
    the direct one when its scenario needs it (`start_direct`)."""

    producer: rota.App
    proxy: FaultProxy
    spans: Path
    faulted: Supervisor
    start_worker: Callable[[], Supervisor]  # starts the direct worker
    lease_s: float
    direct: Supervisor | None = None
    ids: list[int] = field(default_factory=list)
    seconds: dict[int, float] = field(default_factory=dict)  # job id -> its run's length
    due: dict[int, float] = field(default_factory=dict)  # job id -> due (epoch seconds)
    # The fault's end (epoch seconds) and the first moment the store held an outcome the
    # faulted worker wrote for a job it started after it.
    fault_ended: float | None = None
    recovered: float | None = None
    max_offset: dict[str, timedelta] = field(default_factory=dict)  # "direct"/"faulted"

    @property
    def faulted_pid(self) -> int:
        return self.faulted.workers[0].pid

    def start_direct(self, *, wait: bool = True) -> None:
        self.direct = self.start_worker()
        if wait:
            self.direct.workers[0].wait_ready()

    def enqueue(self, durations: tuple[float, ...], jobs: int, spacing_s: float,
                first_s: float = 0.0) -> None:
        """`jobs` more `hold` jobs: the i-th due `first_s + i * spacing_s` from now (the
        store's clock), running `durations[i % len(durations)]` seconds."""
        hold = self.producer.jobs["hold"]
        base = self.producer.clock.now()
        for i in range(jobs):
            length = durations[i % len(durations)]
            due = base + timedelta(seconds=first_s + i * spacing_s)
            job_id = hold.configure(due=due).enqueue(len(self.ids), length)
            record = self.producer.get_job(job_id)
            assert record is not None
            self.ids.append(job_id)
            self.seconds[job_id] = length
            self.due[job_id] = record.due_at.timestamp()

    def runs(self) -> list[Run]:
        return hold_runs(self.spans)

    def faulted_running(self, longer_than_s: float = 0.0) -> list[Run]:
        """The faulted worker's runs in progress, of jobs longer than `longer_than_s`."""
        return [run for run in self.runs() if run.pid == self.faulted_pid and run.end is None
                and self.seconds[run.job_id] > longer_than_s]

    def succeeded(self) -> int:
        try:
            return state_counts(self.producer)[JobState.SUCCEEDED]
        except StoreError:
            return 0

    def drained(self) -> bool:
        return self.succeeded() == len(self.ids)

    def end_fault(self) -> None:
        self.fault_ended = time.time()

    def watch(self) -> None:
        """One look (a `wait_until` tick): the registry's clock offsets, and recovery."""
        try:
            for worker in self.producer.workers():
                which = "faulted" if worker.pid == self.faulted_pid else "direct"
                seen = max(self.max_offset.get(which, timedelta(0)), abs(worker.clock_offset))
                self.max_offset[which] = seen
        except StoreError:
            pass
        if self.fault_ended is None or self.recovered is not None:
            return
        for run in self.runs():
            if (run.pid == self.faulted_pid and run.how == "done"
                    and run.start > self.fault_ended):
                job = self.producer.get_job(run.job_id)
                if (job is not None and job.state is JobState.SUCCEEDED
                        and job.attempt == run.attempt):
                    self.recovered = time.time()
                    return

    def wait(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        return wait_until(condition, timeout_s, poll_s=0.1, tick=self.watch)

    def wait_to_end(self) -> bool:
        """Until every job succeeded and (after a fault) the faulted worker recovered."""
        return self.wait(lambda: self.drained() and (
            self.fault_ended is None or self.recovered is not None), DEADLINE_S)

    def workers(self) -> list[Supervisor]:
        return [self.faulted] + ([self.direct] if self.direct is not None else [])

    def stderr(self) -> str:
        direct = self.direct.stderr() if self.direct is not None else "(not started)"
        return (f"--- faulted\n{self.faulted.stderr()}\n--- direct\n{direct}"
                f"\n--- counts {state_counts(self.producer)}")


@dataclass
class Verdict:
    """What the side record and the store say once the scenario ended."""

    runs: list[Run]
    overlaps: list[tuple[Run, Run]]
    lost: list[int]  # job ids that never succeeded, or never ran to the end
    early: list[Run]  # runs that started before their job was due (less noise)
    duplicates: int  # jobs run more than once
    stopped: int  # runs told to stop
    faulted_done: int  # runs of the faulted worker that ran to the end
    lost_leases: int  # lost-lease warnings in the faulted worker's log

    def figures(self, scene: Scene) -> dict[str, object]:
        recovery = (None if scene.fault_ended is None or scene.recovered is None
                    else round(scene.recovered - scene.fault_ended, 2))
        return {
            "jobs": len(scene.ids), "runs": len(self.runs), "overlaps": len(self.overlaps),
            "lost": len(self.lost), "early": len(self.early), "duplicates": self.duplicates,
            "stopped": self.stopped, "faulted_done": self.faulted_done,
            "lost_leases": self.lost_leases, "recovery_s": recovery,
            "max_offset_s": round(scene.max_offset.get("faulted", timedelta(0))
                                  .total_seconds(), 3),
        }


def _verdict(scene: Scene) -> Verdict:
    runs = scene.runs()
    jobs = {job_id: scene.producer.get_job(job_id) for job_id in scene.ids}
    finished = {run.job_id for run in runs if run.how == "done"}
    lost = [job_id for job_id, job in jobs.items()
            if job is None or job.state is not JobState.SUCCEEDED or job_id not in finished]
    per_job: dict[int, int] = {}
    for run in runs:
        per_job[run.job_id] = per_job.get(run.job_id, 0) + 1
    return Verdict(
        runs=runs, overlaps=overlapping_runs(runs), lost=lost,
        early=[run for run in runs if run.start < scene.due[run.job_id] - EARLY_NOISE_S],
        duplicates=sum(count > 1 for count in per_job.values()),
        stopped=sum(run.how == "stopped" for run in runs),
        faulted_done=sum(run.how == "done" and run.pid == scene.faulted_pid for run in runs),
        lost_leases=sum(scene.faulted.stderr().count(words) for words in LOST_LEASE),
    )


@pytest.fixture
def scene(network_url: str, proxy: FaultProxy, supervisors: Callable[..., Supervisor],
          tmp_path: Path) -> Iterator[Callable[..., Scene]]:
    """`make(lease_s)`: a Scene whose faulted worker (pool 3, that lease) is running and
    ready; nothing is enqueued and the direct worker is not started yet."""
    apps: list[rota.App] = []

    def make(lease_s: float) -> Scene:
        spans = tmp_path / "spans.log"
        producer = rota.App(network_url)
        apps.append(producer)
        producer.job("hold")(lambda n, seconds: None)
        overrides = {"ROTA_CHAOS_SPANS": str(spans), "ROTA_CHAOS_LEASE_S": str(lease_s),
                     "ROTA_CHAOS_POOL": str(POOL)}
        faulted = supervisors(chaos_env(_through(network_url, proxy), **overrides), 1)
        faulted.workers[0].wait_ready()
        return Scene(producer, proxy, spans, faulted,
                     lambda: supervisors(chaos_env(network_url, **overrides), 1), lease_s)

    yield make
    for app in apps:
        app.close()


def _assert_clean(scene: Scene, verdict: Verdict, ended: bool,
                  recovery_bound_s: float = RECOVERY_BOUND_S) -> None:
    """The properties every network scenario asserts, most telling first. Recovery counts
    the run of the first job started after the fault, so a scenario of long jobs allows
    for their length in `recovery_bound_s`."""
    assert verdict.overlaps == [], (
        f"{len(verdict.overlaps)} runs overlapped another run of the same job, e.g. "
        f"{verdict.overlaps[:3]}")
    assert ended, f"not drained and recovered within {DEADLINE_S} s\n{scene.stderr()}"
    assert verdict.lost == [], f"lost: {verdict.lost}\n{scene.stderr()}"
    assert verdict.early == [], [
        (run, scene.due[run.job_id] - run.start) for run in verdict.early]
    assert scene.max_offset.get("faulted", timedelta(0)) <= OFFSET_BOUND, scene.max_offset
    assert scene.max_offset.get("direct", timedelta(0)) <= OFFSET_BOUND, scene.max_offset
    if scene.fault_ended is not None:
        assert scene.recovered is not None
        assert scene.recovered - scene.fault_ended <= recovery_bound_s, (
            f"recovered {scene.recovered - scene.fault_ended:.1f} s after the fault ended")
    assert all(worker.alive() for supervisor in scene.workers()
               for worker in supervisor.workers)


def _stop(scene: Scene) -> None:
    """A graceful stop of both workers, each exiting 0."""
    assert [code for supervisor in scene.workers() for code in supervisor.stop()] == [0, 0], (
        scene.stderr())


# -- the scenarios ----------------------------------------------------------------------

LEASE_S = 2.0
LONG_S = 12.0  # a job that outlives any fault here by far


def _start_long_job_on_the_faulted_worker(s: Scene) -> Run:
    """The faulted worker, alone, starts one LONG_S job; then the direct worker starts.
    (A job whose lease expired runs again on the direct worker only once that one is idle:
    rota.core.suspects. The long job outlives that wait, so a run it was not told to stop
    would still be running beside the new one.)"""
    s.enqueue((LONG_S,), jobs=1, spacing_s=0)
    assert s.wait(lambda: bool(s.faulted_running(longer_than_s=LONG_S - 1)), 30), s.stderr()
    s.start_direct()
    [long_run] = s.faulted_running(longer_than_s=LONG_S - 1)
    return long_run


def test_a_black_hole_longer_than_the_lease_then_heal(
    scene: Callable[..., Scene], chaos_figures: Callable[..., None],
) -> None:
    # Given the faulted worker (pool 3, lease 2 s) running a 12 s job, the direct worker
    # beside it, and 30 jobs of 1 and 2 s due 0.25 s apart
    s = scene(LEASE_S)
    long_run = _start_long_job_on_the_faulted_worker(s)
    s.enqueue((1.0, 2.0), jobs=30, spacing_s=0.25)
    # When the faulted worker's link goes black for 3 leases, then heals
    s.proxy.black_hole()
    time.sleep(3 * LEASE_S)  # the outage itself, not a wait for a condition
    s.proxy.heal()
    s.end_fault()
    ended = s.wait_to_end()
    verdict = _verdict(s)
    chaos_figures("network-black-hole", black_hole_s=3 * LEASE_S, lease_s=LEASE_S,
                  **verdict.figures(s))
    # Then its jobs ran elsewhere, never at the same time as its own runs, which it told
    # to stop; nothing was lost or early, and the same process recovered by itself
    _assert_clean(s, verdict, ended)
    [told] = [run for run in verdict.runs if (run.job_id, run.attempt, run.pid) == (
        long_run.job_id, long_run.attempt, long_run.pid)]
    assert told.how == "stopped", told
    assert s.faulted.restarts == 0
    _stop(s)


def test_half_open_connections_mid_drain(
    scene: Callable[..., Scene], chaos_figures: Callable[..., None],
) -> None:
    # Given the faulted worker (pool 3, lease 2 s) running a 12 s job, the direct worker
    # beside it, and 24 jobs of 3 and 4 s (longer than the lease: each run needs
    # renewals) due 0.3 s apart
    s = scene(LEASE_S)
    _start_long_job_on_the_faulted_worker(s)
    s.enqueue((3.0, 4.0), jobs=24, spacing_s=0.3)
    # When every connection of the faulted worker is forgotten by the network (half-open:
    # whatever is sent on them is lost, and nobody is told)
    assert s.wait(lambda: len(s.faulted_running()) >= 2, 30), s.stderr()
    forgotten = s.proxy.forget_connections()
    s.end_fault()
    ended = s.wait_to_end()
    verdict = _verdict(s)
    renewed = [run for run in verdict.runs if run.pid == s.faulted_pid and run.how == "done"
               and s.fault_ended is not None and run.start > s.fault_ended]
    chaos_figures("network-half-open", connections_forgotten=forgotten, lease_s=LEASE_S,
                  renewed_runs_after=len(renewed), **verdict.figures(s))
    # Then no job ran twice at once and none was lost; and the faulted worker kept
    # renewing on fresh connections: runs longer than the lease, started after the fault,
    # ran to the end and their outcomes were written
    _assert_clean(s, verdict, ended, recovery_bound_s=RECOVERY_BOUND_S + 4.0)
    assert forgotten >= 1
    assert renewed, "the faulted worker finished no job it started after the fault"
    _stop(s)


RESETS = 5


def test_connection_resets_mid_drain(
    scene: Callable[..., Scene], chaos_figures: Callable[..., None],
) -> None:
    # Given 36 jobs of 1, 2 and 4 s, due 0.25 s apart, on two workers (pool 3, lease 2 s)
    s = scene(LEASE_S)
    s.start_direct()
    s.enqueue((1.0, 2.0, 4.0), jobs=36, spacing_s=0.25)

    # When every connection of the faulted worker is reset, 5 times, each time once it
    # started a job since the last reset
    def started() -> int:
        return sum(run.pid == s.faulted_pid for run in s.runs())

    connections = 0
    for _ in range(RESETS):
        seen = started()
        assert s.wait(lambda seen=seen: started() > seen, 30), s.stderr()
        connections += s.proxy.reset()
    s.end_fault()
    ended = s.wait_to_end()
    verdict = _verdict(s)
    chaos_figures("network-resets", resets=RESETS, connections_reset=connections,
                  lease_s=LEASE_S, **verdict.figures(s))
    # Then no job ran twice at once, none was lost, and the worker recovered by itself
    _assert_clean(s, verdict, ended)
    assert connections >= RESETS
    _stop(s)


def test_200ms_per_packet_keeps_leases_and_the_clock_offset(
    scene: Callable[..., Scene], chaos_figures: Callable[..., None],
) -> None:
    # Given two workers (pool 3, lease 5 s: long enough by design for a 400 ms round
    # trip), one of them on a link that holds every packet 200 ms each way, and 30 jobs
    # of 1, 2 and 3 s due 0.25 s apart
    s = scene(5.0)
    s.start_direct()
    s.proxy.delay(0.2, 0.2)
    s.enqueue((1.0, 2.0, 3.0), jobs=30, spacing_s=0.25)
    # When they drain
    ended = s.wait_to_end()
    verdict = _verdict(s)
    chaos_figures("network-200ms", delay_ms=200, lease_s=5.0, **verdict.figures(s))
    # Then the slow worker kept every lease (none lost, no job ran twice), made progress,
    # and the registry shows its clock offset within 0.5 s (it is the same host's clock)
    _assert_clean(s, verdict, ended)
    assert verdict.lost_leases == 0, s.faulted.stderr()
    assert verdict.duplicates == 0
    assert verdict.faulted_done >= 3, verdict.faulted_done
    assert "faulted" in s.max_offset, "the slow worker never showed in the registry"
    _stop(s)


def test_requests_held_for_seconds_do_not_skew_the_workers_clock(
    scene: Callable[..., Scene], chaos_figures: Callable[..., None],
) -> None:
    # Given two workers (pool 3, lease 5 s) that ran a first few jobs of 0.5 s
    s = scene(5.0)
    s.start_direct()
    s.enqueue((0.5,), jobs=12, spacing_s=0.05)
    assert s.wait(lambda: any(run.pid == s.faulted_pid and run.how == "done"
                              for run in s.runs()), 30), s.stderr()

    def last_seen() -> datetime | None:
        rows = [w for w in s.producer.workers() if w.pid == s.faulted_pid]
        return rows[0].last_seen if rows else None

    # When every packet from the faulted worker to the server is held 2.5 s (answers pass
    # at once: a round trip then says little about when the server read its clock, its
    # middle being 1.25 s before the answer was true) until the worker refreshed its
    # registry row twice, the second time after measuring the clock on that link only, or
    # for 25 s if it did not (a worker that finds its store not answering in time may
    # write no row at all)
    s.proxy.delay(2.5, 0.0)
    refreshes: list[datetime | None] = [last_seen()]

    def refreshed_twice() -> bool:
        if (seen := last_seen()) != refreshes[-1]:
            refreshes.append(seen)
        return len(refreshes) > 2

    s.wait(refreshed_twice, 25)
    s.proxy.delay(0.0, 0.0)
    s.end_fault()
    # ... and then 40 more jobs of 0.5 s are due 0.15 s apart (a bit more than the direct
    # worker alone keeps up with)
    s.enqueue((0.5,), jobs=40, spacing_s=0.15, first_s=0.2)
    ended = s.wait_to_end()
    verdict = _verdict(s)
    chaos_figures("network-requests-held", held_s=2.5, lease_s=5.0,
                  registry_refreshes_during=len(refreshes) - 1, **verdict.figures(s))
    # Then the faulted worker never took its clock from such a reading: the registry
    # never showed an offset over 0.5 s and no job started before it was due; nothing
    # overlapped or was lost, and it recovered by itself
    _assert_clean(s, verdict, ended)
    _stop(s)


@pytest.mark.parametrize("late", ["answer", "request"])
def test_a_claim_delayed_past_its_lease(
    late: str, scene: Callable[..., Scene], chaos_figures: Callable[..., None],
) -> None:
    # Given the faulted worker alone (pool 3, lease 2 s), its link holding every packet
    # 1.5 leases one way (the claim's answer, or the claim itself, arrives after the
    # claim's lease ran out) for at least 2 leases
    s = scene(LEASE_S)
    held_s = 1.5 * LEASE_S
    s.proxy.delay(*((0.0, held_s) if late == "answer" else (held_s, 0.0)))
    fault_began = time.monotonic()
    # When a 12 s job and 30 jobs of 1 and 2 s (due 0.25 s apart from 0.5 s on) are
    # enqueued, the faulted worker's claim of the long one reaches the store (or 8 s pass:
    # a worker may give up on its store before), and the direct worker starts
    s.enqueue((LONG_S,), jobs=1, spacing_s=0)
    s.enqueue((1.0, 2.0), jobs=30, spacing_s=0.25, first_s=0.5)
    long_job = s.ids[0]

    def claimed_by_the_faulted_worker() -> bool:
        job = s.producer.get_job(long_job)
        return (job is not None and job.state is JobState.LEASED
                and f":{s.faulted_pid}:" in (job.lease_owner or ""))

    reached = s.wait(claimed_by_the_faulted_worker, 8)
    s.start_direct(wait=False)
    time.sleep(max(0.0, fault_began + 2 * LEASE_S - time.monotonic()))  # the fault itself
    s.proxy.delay(0.0, 0.0)
    s.end_fault()
    ended = s.wait_to_end()
    verdict = _verdict(s)
    chaos_figures(f"network-late-{late}", held_s=held_s, lease_s=LEASE_S,
                  late_claim_reached_the_store=reached, **verdict.figures(s))
    # Then no job it claimed so late ran beside its run elsewhere, nothing ran before it
    # was due, nothing was lost, the registry never showed a clock offset over 0.5 s,
    # and the worker recovered by itself
    _assert_clean(s, verdict, ended)
    _stop(s)


# -- concurrent cancels ------------------------------------------------------------------

CROSSINGS = 24
FILL = 60  # extra children per root: each cascade's first round locks many rows
THREADS = 8


def test_concurrent_cancels_of_crossing_cascades(
    network_url: str, chaos_figures: Callable[..., None],
) -> None:
    # Given 24 pairs of workflows whose cascades cross: roots A and B; X after A; Y after
    # X and B; Z after A and Y (and 60 more children under each root), so that cancelling
    # A locks X and Z before Y, and cancelling B locks Y before Z
    app = rota.App(network_url)
    try:
        work = app.job("work")(lambda n: None)
        pairs: list[tuple[int, int]] = []
        every: list[int] = []
        n = 0
        for _ in range(CROSSINGS):
            a, b = work.enqueue(n), work.enqueue(n + 1)
            x = work.configure(after=[a]).enqueue(n + 2)
            y = work.configure(after=[x, b]).enqueue(n + 3)
            z = work.configure(after=[a, y]).enqueue(n + 4)
            fill = [*work.configure(after=[a]).enqueue_many([(n + 5 + i,) for i in range(FILL)]),
                    *work.configure(after=[b]).enqueue_many(
                        [(n + 5 + FILL + i,) for i in range(FILL)])]
            n += 5 + 2 * FILL
            pairs.append((a, b))
            every += [a, b, x, y, z, *fill]
        # When 8 threads cancel them, both roots of 4 pairs at once in each round
        roots = [root for pair in pairs for root in pair]
        errors: list[BaseException] = []
        lock = threading.Lock()
        barrier = threading.Barrier(THREADS)

        def cancel(mine: list[int]) -> None:
            for root in mine:
                try:
                    barrier.wait(30)
                except threading.BrokenBarrierError:
                    return
                try:
                    app.cancel(root)
                except StoreError as error:
                    with lock:
                        errors.append(error)

        rounds = [roots[i::THREADS] for i in range(THREADS)]
        threads = [threading.Thread(target=cancel, args=(mine,)) for mine in rounds]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        took_s = time.monotonic() - began
        assert not any(thread.is_alive() for thread in threads)
        jobs = {job_id: app.get_job(job_id) for job_id in every}
        pending = raw_sql(network_url, "SELECT count(*) FROM rota.job_edges AS e JOIN {jobs} "
                          "AS p ON p.id = e.parent_id WHERE e.pending AND p.state IN "
                          "('succeeded', 'cancelled', 'dead_lettered', 'quarantined')")
    finally:
        app.close()
    not_cancelled = [job_id for job_id, job in jobs.items()
                     if job is None or job.state is not JobState.CANCELLED]
    chaos_figures("network-crossing-cancels", pairs=CROSSINGS, threads=THREADS,
                  jobs=len(every), store_errors=len(errors), not_cancelled=len(not_cancelled),
                  took_s=round(took_s, 1))
    # Then no cancel failed, every job of every workflow is cancelled, and no edge still
    # waits on a parent that finished
    assert errors == [], f"{len(errors)} cancels failed, e.g. {errors[0]}"
    assert not_cancelled == []
    assert pending == [(0,)]
    for job_id, job in jobs.items():
        if job_id not in roots:
            assert job is not None and "parent job" in (job.last_error or ""), job
