"""A foreign exception gets out of `App.run_until_idle()`.

The contract: an exception from the store (or any other part of rota) that is not a job's
own failure propagates out of `run_until_idle()`, after the pass has handed back every job
it claimed and did not run: a test must see it. Handed back means: not leased, scheduled,
due now, its attempt not counted, so the next `run_until_idle()` runs it; no job is lost
and none runs twice.

The faults are injected by `FaultyStore`, a real store of each kind whose `claim` raises
once, at a chosen claim. Only the public API and the Store contract are used.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

import rota
from rota import JobState, Strict, Weighted, WorkerGroupOptions
from rota.store import open_store
from rota.store.base import Store, StoreError

pytestmark = pytest.mark.timeout(120)

Fault = Callable[["FaultyStore", int], bool]
ERRORS: dict[str, Callable[[], Exception]] = {
    "RuntimeError": lambda: RuntimeError("boom"),
    "StoreError": lambda: StoreError("boom: the database went away"),
}


class FaultyStore:
    """Delegates everything to a real store, but for one `claim`: the first claim that asks
    for jobs (a limit above 0, some Queue) for which `fault(store, n)` is true, n counting
    such claims from 0, raises `error`. Claims that only probe are passed through."""

    def __init__(self, inner: Store, error: Exception, fault: Fault) -> None:
        self.inner = inner
        self.error = error
        self.fault = fault
        self.claims = 0  # claims that asked for jobs, the failing one included
        self.failed_at: int | None = None  # the number of the claim that raised
        self.leased_at_failure: int | None = None  # jobs leased when it raised

    def claim(self, queues: Sequence[str], limit: int, **options: Any) -> Any:
        if limit > 0 and len(queues) > 0:
            number = self.claims
            self.claims += 1
            if self.failed_at is None and self.fault(self, number):
                self.failed_at = number
                self.leased_at_failure = self.leased()
                raise self.error
        return self.inner.claim(queues, limit, **options)

    def leased(self) -> int:
        return sum(count for (_, state), count in self.inner.count_jobs().items()
                   if state is JobState.LEASED)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def nth_claim(n: int) -> Fault:
    """The n-th claim (from 0) that asks for jobs."""
    return lambda _store, number: number == n


def mid_pass(store: FaultyStore, _number: int) -> bool:
    """The first claim made while jobs are leased. Under run_until_idle() a job is leased
    only between the claim of its pass and its run, so this is a later round trip of a
    pass whose earlier claims got jobs."""
    return store.leased() > 0


class Drive:
    """An App on a FaultyStore, a job that logs its tag, and the ids of what was enqueued."""

    def __init__(self, store_url: str, clock: rota.VirtualClock, error: Exception,
                 fault: Fault) -> None:
        self.store = FaultyStore(open_store(store_url), error, fault)
        self.app = rota.App(self.store, clock=clock)
        self.log: list[str] = []
        self.ids: dict[int, str] = {}
        log = self.log

        @self.app.job("work")
        def work(tag: str) -> None:
            log.append(tag)

        self.job = work

    def enqueue(self, backlog: dict[str, int]) -> None:
        for queue, count in backlog.items():
            tags = [f"{queue}.{n}" for n in range(count)]
            ids = self.job.configure(queue=queue).enqueue_many([(tag,) for tag in tags])
            self.ids.update(zip(ids, tags, strict=True))

    def records(self) -> list[rota.JobRecord]:
        records = [self.app.get_job(job_id) for job_id in self.ids]
        assert all(record is not None for record in records)
        return [record for record in records if record is not None]

    def close(self) -> None:
        self.app.close()


MakeDrive = Callable[[Exception, Fault], Drive]


@pytest.fixture
def make_drive(store_url: str, clock: rota.VirtualClock) -> Iterator[MakeDrive]:
    """Factory of Drives on a fresh store of each kind (memory, SQLite, PostgreSQL)."""
    drives: list[Drive] = []

    def factory(error: Exception, fault: Fault) -> Drive:
        drive = Drive(store_url, clock, error, fault)
        drives.append(drive)
        return drive

    yield factory
    for drive in drives:
        drive.close()


def assert_propagates_and_hands_back(drive: Drive, error: Exception) -> list[str]:
    """run_until_idle() raises `error`; then no job is leased, every job that ran ran once
    and succeeded, and every other one is scheduled, due, attempt 0; then, the fault gone
    (it fires once), a second run_until_idle() runs each of those exactly once.

    Returns the tags of the jobs that ran before the exception got out."""
    # When the App runs until idle / Then the store's exception gets out
    try:
        executed = drive.app.run_until_idle()
    except type(error) as raised:
        assert "boom" in str(raised)
        assert isinstance(raised, type(error))
    else:
        pytest.fail(
            f"run_until_idle() returned {executed} instead of raising: the claim that raised "
            f"{error!r} (claim number {drive.store.failed_at}, None if the fault never "
            "fired) was swallowed")
    assert drive.store.failed_at is not None
    # And no job is left leased: the jobs the pass claimed and did not run were handed back
    ran_before = list(drive.log)
    assert len(set(ran_before)) == len(ran_before), "a job ran twice"
    by_state = Counter(record.state for record in drive.records())
    assert by_state[JobState.LEASED] == 0, by_state
    for record in drive.records():
        tag = drive.ids[record.id]
        if tag in ran_before:
            assert (record.state, record.attempt) == (JobState.SUCCEEDED, 1), record
        else:
            assert (record.state, record.attempt) == (JobState.SCHEDULED, 0), record
    # And those are due now: runnable again at once, not when some lease expires
    infos = {info.name: info for info in drive.app.queues()}
    assert sum(info.due for info in infos.values()) == len(drive.ids) - len(ran_before)
    # When the App runs until idle again (the fault fired once: the store is healthy)
    executed = drive.app.run_until_idle()
    # Then every job left ran exactly once: none lost, none twice
    assert executed == len(drive.ids) - len(ran_before)
    assert Counter(drive.log) == Counter(drive.ids.values())
    assert all(record.state is JobState.SUCCEEDED for record in drive.records())
    assert drive.app.run_until_idle() == 0
    return ran_before


@pytest.mark.parametrize("error_kind", list(ERRORS))
def test_a_claim_failing_after_an_earlier_round_trip_of_its_pass_got_jobs(
    make_drive: MakeDrive, error_kind: str
) -> None:
    # Given 6:3:1, pool 10, and a with only 2 due jobs: the first pass claims a's 2 (and
    # b's 3, c's 1), then reflows a's 4 free slots to b and c in a later round trip, which
    # raises
    error = ERRORS[error_kind]()
    drive = make_drive(error, mid_pass)
    drive.app.add_worker_group(WorkerGroupOptions(
        name="fair", policy=Weighted([("a", 6), ("b", 3), ("c", 1)]), pool_size=10))
    drive.enqueue({"a": 2, "b": 50, "c": 50})
    # When run until idle / Then it raises, the claimed jobs back on their Queues, and a
    # second run runs every job once
    assert_propagates_and_hands_back(drive, error)
    # And the failure did hit a pass holding jobs it had claimed and not run
    assert drive.store.leased_at_failure is not None and drive.store.leased_at_failure > 0


@pytest.mark.parametrize("error_kind", list(ERRORS))
@pytest.mark.parametrize("failing_claim", [0, 1, 3, 5])
def test_a_weighted_group_whose_nth_claim_fails(
    make_drive: MakeDrive, error_kind: str, failing_claim: int
) -> None:
    # Given 6:3:1, pool 4, every Queue backlogged (21 jobs: 6 passes at least, a claim
    # each), and a store whose n-th claim raises
    error = ERRORS[error_kind]()
    drive = make_drive(error, nth_claim(failing_claim))
    drive.app.add_worker_group(WorkerGroupOptions(
        name="fair", policy=Weighted([("a", 6), ("b", 3), ("c", 1)]), pool_size=4))
    drive.enqueue({"a": 12, "b": 6, "c": 3})
    # When run until idle / Then it raises; nothing is leased, nothing lost, nothing twice
    assert_propagates_and_hands_back(drive, error)


@pytest.mark.parametrize("error_kind", list(ERRORS))
@pytest.mark.parametrize("failing_claim", [0, 2])
def test_a_strict_group_whose_nth_claim_fails(
    make_drive: MakeDrive, error_kind: str, failing_claim: int
) -> None:
    # Given Strict(hi, lo), pool 3, 5 hi and 7 lo jobs, and a store whose n-th claim raises
    error = ERRORS[error_kind]()
    drive = make_drive(error, nth_claim(failing_claim))
    drive.app.add_worker_group(WorkerGroupOptions(
        name="strict", policy=Strict("hi", "lo"), pool_size=3))
    drive.enqueue({"hi": 5, "lo": 7})
    # When run until idle / Then it raises; nothing is leased, nothing lost, nothing twice
    ran_before = assert_propagates_and_hands_back(drive, error)
    # And the jobs that ran before it, then the others, ran in Strict order: hi first
    assert len(ran_before) <= 3 * failing_claim
    ran = [tag.split(".")[0] for tag in drive.log]
    assert ran == sorted(ran, key=["hi", "lo"].index)


@pytest.mark.parametrize("error_kind", list(ERRORS))
def test_a_claim_failing_in_the_second_group_of_a_round(
    make_drive: MakeDrive, error_kind: str
) -> None:
    # Given a Strict group then a Weighted 6:3:1 group (pool 10, a short) on other Queues;
    # the Weighted pass's reflow round trip raises, after the Strict pass ran its jobs
    error = ERRORS[error_kind]()
    drive = make_drive(error, mid_pass)
    drive.app.add_worker_group(WorkerGroupOptions(
        name="strict", policy=Strict("hi", "lo"), pool_size=2))
    drive.app.add_worker_group(WorkerGroupOptions(
        name="fair", policy=Weighted([("a", 6), ("b", 3), ("c", 1)]), pool_size=10))
    drive.enqueue({"hi": 3, "lo": 3, "a": 2, "b": 20, "c": 20})
    # When run until idle / Then it raises; nothing is leased, nothing lost, nothing twice
    ran_before = assert_propagates_and_hands_back(drive, error)
    # And it hit the Weighted pass holding jobs it had claimed, after the Strict pass ran
    assert drive.store.leased_at_failure is not None and drive.store.leased_at_failure > 0
    assert {tag.split(".")[0] for tag in ran_before} == {"hi"}
