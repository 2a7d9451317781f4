"""The store contract, finish hints (`rota.store.base.FinishSource`, what `App.wait` sleeps
on): every path into a finished state calls the listeners after its commit, whoever
finished the job (another thread; on SQLite and PostgreSQL another connection and another
process); `job_states` reads many jobs' states at once. Run unchanged on every store.

Each test starts listening after its setup, then finishes one job and waits for the hint
on an event (bounded, never timed). On PostgreSQL nothing else can call the listener (no
polling there): a path that sent no NOTIFY fails its test.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

from rota.core.jobs import JobState, Lease
from rota.core.outcomes import Cancelled, DeadLettered, Quarantined, RetryAt, Succeeded
from rota.store import Store
from rota.store.base import FinishSource
from tests.store import finish_processes
from tests.store.test_contract import LEASE, T0, new

LATER = T0 + timedelta(minutes=5)
HINT_BOUND_S = 60.0  # a bound for a hung store, not a measurement
SPAWN = multiprocessing.get_context("spawn")


def source(store: Store) -> FinishSource:
    assert isinstance(store, FinishSource)
    return store


class Hints:
    """Counts the hints of one listener; `wait()` until there is one."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.count = 0

    def __call__(self) -> None:
        self.count += 1
        self.event.set()

    def wait(self) -> bool:
        return self.event.wait(HINT_BOUND_S)


@pytest.fixture
def listen(store: Store) -> Iterator[Callable[[Store], Hints]]:
    stops: list[Callable[[], None]] = []

    def start(on: Store) -> Hints:
        hints = Hints()
        stops.append(source(on).listen_finished(hints))
        return hints

    yield start
    for stop in stops:
        stop()


def leased(store: Store, *, cancel: bool = False, expires: timedelta = LEASE) -> Lease:
    """A job claimed now (its cancel requested, with `cancel`): its lease."""
    (job_id,) = store.enqueue([new()], T0)
    (job,) = store.claim(["q"], 1, now=T0, owner="w1", lease_expires_at=T0 + expires)
    assert job.id == job_id
    if cancel:
        assert store.cancel(job_id, T0)
    return job.lease


def in_a_thread(finish: Callable[[], object]) -> None:
    thread = threading.Thread(target=finish)
    thread.start()
    thread.join()


# Every path into a finished state: (name, setup -> the job's lease, the finish, the state).
Finish = Callable[[Store, Lease], object]
PATHS: list[tuple[str, bool, Finish, JobState]] = [
    ("complete", False, lambda s, lease: s.complete([lease], T0), JobState.SUCCEEDED),
    ("complete with a result", False, lambda s, lease: s.complete([lease], T0, ["7"]),
     JobState.SUCCEEDED),
    ("dead_letter", False, lambda s, lease: s.dead_letter(lease, T0, "boom"),
     JobState.DEAD_LETTERED),
    ("quarantine", False, lambda s, lease: s.quarantine(lease, T0, "unknown"),
     JobState.QUARANTINED),
    ("cancel_leased", True, lambda s, lease: s.cancel_leased(lease, T0, "asked"),
     JobState.CANCELLED),
    ("expire_lease dead-lettering", False,
     lambda s, lease: s.expire_lease(lease, LATER, None, "expired"), JobState.DEAD_LETTERED),
    ("retry of a cancel-requested job", True,
     lambda s, lease: s.retry(lease, T0, LATER, "again"), JobState.CANCELLED),
    ("release of a cancel-requested job", True,
     lambda s, lease: s.release([lease], T0), JobState.CANCELLED),
    ("expire_lease of a cancel-requested job", True,
     lambda s, lease: s.expire_lease(lease, LATER, LATER, "expired"), JobState.CANCELLED),
    ("claim carrying a success", False,
     lambda s, lease: s.claim(["q"], 1, now=T0, owner="w2", lease_expires_at=T0 + LEASE,
                              outcomes=[(lease, Succeeded())]), JobState.SUCCEEDED),
    ("claim carrying a success with a result", False,
     lambda s, lease: s.claim(["q"], 1, now=T0, owner="w2", lease_expires_at=T0 + LEASE,
                              outcomes=[(lease, Succeeded('"r"'))]), JobState.SUCCEEDED),
    ("claim carrying only outcomes", False,
     lambda s, lease: s.claim([], 0, now=T0, owner="w2", lease_expires_at=T0 + LEASE,
                              outcomes=[(lease, Succeeded())]), JobState.SUCCEEDED),
    ("claim carrying a dead-lettering", False,
     lambda s, lease: s.claim(["q"], 1, now=T0, owner="w2", lease_expires_at=T0 + LEASE,
                              outcomes=[(lease, DeadLettered("boom"))]),
     JobState.DEAD_LETTERED),
    ("claim carrying a quarantine", False,
     lambda s, lease: s.claim(["q"], 1, now=T0, owner="w2", lease_expires_at=T0 + LEASE,
                              outcomes=[(lease, Quarantined("unknown"))]),
     JobState.QUARANTINED),
    ("claim carrying a cancel", True,
     lambda s, lease: s.claim(["q"], 1, now=T0, owner="w2", lease_expires_at=T0 + LEASE,
                              outcomes=[(lease, Cancelled("asked"))]), JobState.CANCELLED),
    ("claim carrying a retry of a cancel-requested job", True,
     lambda s, lease: s.claim(["q"], 1, now=T0, owner="w2", lease_expires_at=T0 + LEASE,
                              outcomes=[(lease, RetryAt(LATER, "again"))]),
     JobState.CANCELLED),
]


@pytest.mark.parametrize(("cancel", "finish", "state"), [path[1:] for path in PATHS],
                         ids=[path[0] for path in PATHS])
def test_every_path_into_a_finished_state_hints_after_its_commit(
    store: Store, listen: Callable[[Store], Hints], cancel: bool, finish: Finish,
    state: JobState,
) -> None:
    # Given a leased job (its cancel requested, for the paths that need it)
    lease = leased(store, cancel=cancel, expires=timedelta(seconds=1))
    # And a listener started after that
    hints = listen(store)
    # When another thread finishes the job by this path
    in_a_thread(lambda: finish(store, lease))
    # Then the listener is called, and the finish is visible when it is
    assert hints.wait()
    assert source(store).job_states([lease.job_id]) == {lease.job_id: state}


def test_cancelling_a_scheduled_job_hints(
    store: Store, listen: Callable[[Store], Hints],
) -> None:
    (job_id,) = store.enqueue([new()], T0)
    hints = listen(store)
    in_a_thread(lambda: store.cancel(job_id, T0))
    assert hints.wait()
    assert source(store).job_states([job_id]) == {job_id: JobState.CANCELLED}


def test_a_finish_through_another_connection_hints(
    open_stores: Callable[[int], list[Store]],
) -> None:
    # Given two stores on one database (memory: one store), listening on the first
    listening, finishing = open_stores(2)
    lease = leased(finishing)
    hints = Hints()
    stop = source(listening).listen_finished(hints)
    try:
        # When the second one completes the job
        finishing.complete([lease], T0)
        # Then the first one's listener hears of it
        assert hints.wait()
        assert source(listening).job_states([lease.job_id]) == {
            lease.job_id: JobState.SUCCEEDED}
    finally:
        stop()


def test_a_finish_by_another_process_hints(
    store_url: str, store: Store, listen: Callable[[Store], Hints],
) -> None:
    if store_url.startswith("memory:"):
        pytest.skip("a memory:// store lives in one process")
    # Given a leased job and a listener in this process
    lease = leased(store)
    hints = listen(store)
    # When another process completes it
    child = SPAWN.Process(target=finish_processes.complete,
                          args=(store_url, lease.job_id, lease.owner, lease.attempt))
    child.start()
    child.join(HINT_BOUND_S)
    assert child.exitcode == 0
    # Then this process's listener hears of it
    assert hints.wait()
    assert source(store).job_states([lease.job_id]) == {lease.job_id: JobState.SUCCEEDED}


def test_a_stopped_listener_is_not_called(store: Store) -> None:
    lease = leased(store)
    hints = Hints()
    source(store).listen_finished(hints)()  # started and stopped at once
    store.complete([lease], T0)
    # (A second listener, still running, is the event to wait on.)
    later = Hints()
    stop = source(store).listen_finished(later)
    try:
        store.complete([leased(store)], T0)
        assert later.wait()
    finally:
        stop()
    assert hints.count == 0


def test_job_states_reads_many_jobs_and_leaves_out_those_that_do_not_exist(
    store: Store,
) -> None:
    first, second, third = store.enqueue([new(), new(), new()], T0)
    (claimed,) = store.claim(["q"], 1, now=T0, owner="w1", lease_expires_at=T0 + LEASE)
    assert claimed.id == first
    assert store.cancel(third, T0)
    states = source(store).job_states([third, first, second, 999_999])
    assert states == {first: JobState.LEASED, second: JobState.SCHEDULED,
                      third: JobState.CANCELLED}
    assert source(store).job_states([]) == {}
