"""The store contract under concurrency, run unchanged against every store.

Each thread opens its own store from the same URL, as separate Worker processes would
(memory:// lives in one process, so its threads share one store object). A barrier starts
the threads together; nothing waits on a timer.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from rota.core.jobs import JobState, Lease, NewJob
from rota.store import Store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)
R = TypeVar("R")

OpenStores = Callable[[int], list[Store]]


def run_together(tasks: list[Callable[[], R]]) -> list[R]:
    """Run `tasks` on as many threads, released at once; their results, or their error."""
    barrier = threading.Barrier(len(tasks))

    def start(task: Callable[[], R]) -> R:
        barrier.wait()
        return task()

    with ThreadPoolExecutor(max_workers=len(tasks)) as pool:
        return list(pool.map(start, tasks))


def new(queue: str = "q") -> NewJob:
    return NewJob(name="job", queue=queue, due_at=T0)


def drain(store: Store, owner: str, batch: int) -> list[int]:
    claimed: list[int] = []
    while jobs := store.claim(["q"], batch, now=T0, owner=owner, lease_expires_at=T0 + LEASE):
        claimed.extend(job.id for job in jobs)
    return claimed


def test_eight_concurrent_claimers_never_share_a_job(open_stores: OpenStores) -> None:
    # Given 64 due jobs and 8 claimers, each with its own store
    stores = open_stores(8)
    ids = stores[0].enqueue([new() for _ in range(64)], T0)

    # When they all drain the Queue at once, 3 jobs per claim
    def claimer(index: int) -> Callable[[], list[int]]:
        return lambda: drain(stores[index], f"w{index}", 3)

    claimed = [job_id for batch in run_together([claimer(i) for i in range(8)]) for job_id in batch]

    # Then every job was claimed exactly once
    assert sorted(claimed) == sorted(ids)
    assert stores[0].count_jobs() == {("q", JobState.LEASED): 64}


def test_concurrent_sweepers_apply_each_expiry_exactly_once(open_stores: OpenStores) -> None:
    # Given 32 leases that expired
    stores = open_stores(4)
    ids = stores[0].enqueue([new() for _ in range(32)], T0)
    stores[0].claim(["q"], 32, now=T0, owner="gone", lease_expires_at=T0 + LEASE)
    later = T0 + LEASE
    retry_at = later + timedelta(seconds=5)

    # When 4 sweepers find and expire them at once
    def sweeper(store: Store) -> Callable[[], list[int]]:
        def sweep() -> list[int]:
            return [
                job.id for job in store.find_expired_leases(later, 100)
                if store.expire_lease(job.lease, later, retry_at, "LeaseExpired")
            ]
        return sweep

    applied = [job_id for batch in run_together([sweeper(s) for s in stores]) for job_id in batch]

    # Then each expiry applied exactly once, and every job is claimable again
    assert sorted(applied) == sorted(ids)
    assert stores[0].count_jobs() == {("q", JobState.SCHEDULED): 32}
    job = stores[0].get_job(ids[0])
    assert job is not None and (job.due_at, job.attempt, job.last_error) == (
        retry_at, 1, "LeaseExpired")


def test_concurrent_enqueue_and_claim_lose_nothing(open_stores: OpenStores) -> None:
    # Given 2 enqueuers adding 10 batches of 10 while 2 claimers drain
    stores = open_stores(4)
    enqueuers_left = [2]
    counting = threading.Lock()
    all_enqueued = threading.Event()

    def enqueuer(store: Store) -> Callable[[], list[int]]:
        def run() -> list[int]:
            ids = [job_id for _ in range(10)
                   for job_id in store.enqueue([new() for _ in range(10)], T0)]
            with counting:
                enqueuers_left[0] -= 1
                if enqueuers_left[0] == 0:
                    all_enqueued.set()
            return ids
        return run

    def claimer(store: Store, owner: str) -> Callable[[], list[int]]:
        def run() -> list[int]:
            claimed: list[int] = []
            while not all_enqueued.is_set():
                claimed.extend(drain(store, owner, 4))
            claimed.extend(drain(store, owner, 4))  # every job is committed by now
            return claimed
        return run

    # When they all run at once
    results = run_together([
        enqueuer(stores[0]), enqueuer(stores[1]),
        claimer(stores[2], "w1"), claimer(stores[3], "w2"),
    ])

    # Then every enqueued job was claimed exactly once
    enqueued = results[0] + results[1]
    claimed = results[2] + results[3]
    assert len(set(enqueued)) == 200
    assert sorted(claimed) == sorted(enqueued)


def test_concurrent_purgers_delete_each_job_once_and_spare_live_ones(
    open_stores: OpenStores,
) -> None:
    # Given 120 jobs that succeeded at T0, and 10 jobs still due on the same store
    stores = open_stores(4)
    done = stores[0].enqueue([new("done") for _ in range(120)], T0)
    jobs = stores[0].claim(["done"], 120, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    assert stores[0].complete([job.lease for job in jobs], T0) == 120
    live = stores[0].enqueue([new() for _ in range(10)], T0)
    later = T0 + timedelta(days=2)

    # When 4 purgers delete them at once, 7 per call, while a claimer drains the live ones
    def purger(store: Store) -> Callable[[], list[int]]:
        def run() -> list[int]:
            counts: list[int] = []
            while deleted := store.purge([JobState.SUCCEEDED], later, 7):
                counts.append(deleted)
            return counts
        return run

    results = run_together([
        *(purger(store) for store in stores[:3]),
        lambda: drain(stores[3], "claimer", 2),
    ])

    # Then the deletions add up to exactly the finished jobs, each batch within the limit
    counts = [count for batch in results[:3] for count in batch]
    assert sum(counts) == len(done) and max(counts) <= 7
    # And the live jobs were all claimed, none deleted
    assert sorted(results[3]) == sorted(live)
    assert stores[0].count_jobs() == {("q", JobState.LEASED): 10}


def test_children_enqueued_while_their_parents_finish_are_each_settled_once(
    open_stores: OpenStores,
) -> None:
    # Given 120 leased parents; a fifth of them will fail
    stores = open_stores(6)
    parents = stores[0].enqueue([new("p") for _ in range(120)], T0)
    leases = [job.lease for job in stores[0].claim(["p"], 120, now=T0, owner="w",
                                                   lease_expires_at=T0 + LEASE)]
    rng = random.Random(7)
    failing = set(rng.sample(parents, 24))
    # ...finished by two finishers, each in shuffled batches (successes several at a time,
    # failures one by one), while four enqueuers add children after 1-4 random parents
    # each (fan-ins across both finishers' batches), needing success or mere finish
    rng.shuffle(leases)
    halves = [leases[:60], leases[60:]]
    plans = [[(tuple(rng.sample(parents, rng.randint(1, 4))),
               rng.choice(["succeeded", "finished"])) for _ in range(30)] for _ in range(4)]

    def finisher(store: Store, mine: list[Lease]) -> Callable[[], None]:
        def run() -> None:
            for start in range(0, len(mine), 6):
                batch = mine[start:start + 6]
                good = [lease for lease in batch if lease.job_id not in failing]
                assert store.complete(good, T0) == len(good)
                for lease in batch:
                    if lease.job_id in failing:
                        assert store.dead_letter(lease, T0, "Boom: failed")
        return run

    def enqueuer(store: Store, plan: list[tuple[tuple[int, ...], str]]
                 ) -> Callable[[], list[tuple[int, tuple[int, ...], str]]]:
        def run() -> list[tuple[int, tuple[int, ...], str]]:
            made = []
            for after, outcome in plan:
                child, = store.enqueue([NewJob("job", "c", T0, parents=after,
                                               after_outcome=outcome)], T0)
                made.append((child, after, outcome))
            return made
        return run

    # When they all run at once
    results = run_together([
        finisher(stores[0], halves[0]), finisher(stores[1], halves[1]),
        *(enqueuer(stores[2 + i], plans[i]) for i in range(4)),
    ])

    # Then no child waits: each is scheduled exactly when its parents let it run, and
    # cancelled otherwise
    children = [made for result in results[2:] for made in result or ()]
    assert len(children) == 120
    for child, after, outcome in children:
        record = stores[0].get_job(child)
        assert record is not None and record.parents == after
        runs = outcome == "finished" or not failing.intersection(after)
        assert record.state is (JobState.SCHEDULED if runs else JobState.CANCELLED), (
            child, after, outcome, record.state)
    counts = stores[0].count_jobs()
    assert ("c", JobState.WAITING) not in counts
    assert sum(n for (queue, _), n in counts.items() if queue == "c") == 120
