"""The store contract for job counts: `count_jobs` and `queue_infos` equal a full count of
the jobs after any sequence of changes, run unchanged against every store.

The durable stores keep the counts as jobs change instead of scanning (migration 8); these
tests drive a seeded random walk over every operation that changes a job's state or
deletes it, and check after each step against `list_jobs`, which reads the rows.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import JobRecord, JobState, Lease, NewJob
from rota.core.outcomes import (
    Cancelled,
    DeadLettered,
    Outcome,
    Quarantined,
    RetryAt,
    Snoozed,
    Succeeded,
)
from rota.store import Store
from tests.store.test_contract_concurrency import run_together

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)
QUEUES = ("a", "b", "c")

OpenStores = Callable[[int], list[Store]]


def every_job(store: Store) -> list[JobRecord]:
    return store.list_jobs(limit=100_000)


def assert_counts_exact(store: Store, now: datetime) -> None:
    jobs = every_job(store)
    truth = Counter((job.queue, job.state) for job in jobs)
    assert store.count_jobs() == dict(truth)
    infos = {info.name: info for info in store.queue_infos(now)}
    assert set(infos) == {queue for queue, _ in truth}
    for name, info in infos.items():
        assert info.counts == {state: truth[(name, state)] for state in JobState}
        due = [job.due_at for job in jobs
               if job.queue == name and job.state is JobState.SCHEDULED and job.due_at <= now]
        assert info.due == len(due)
        assert info.oldest_due_at == (min(due) if due else None)


def leased(store: Store) -> list[JobRecord]:
    return store.list_jobs(state=JobState.LEASED, limit=100_000)


def step(store: Store, rng: random.Random, now: datetime) -> None:
    """One random change, among every kind that moves a job between states or deletes it."""
    held = leased(store)
    lease: Lease | None = rng.choice(held).lease if held else None
    kind = rng.choice(["enqueue", "enqueue", "keyed", "claim", "claim", "complete",
                       "complete", "retry", "dead_letter", "quarantine", "cancel_leased",
                       "release", "cancel", "requeue", "requeue_many", "purge", "expire",
                       "claim_with_outcomes", "snooze", "enqueue_expiring"])
    if kind == "enqueue":
        store.enqueue([NewJob(name="job", queue=rng.choice(QUEUES),
                              due_at=now + timedelta(seconds=rng.randint(-30, 30)))
                       for _ in range(rng.randint(1, 6))], now)
    elif kind == "enqueue_expiring":  # some already past: a claim ends them cancelled
        store.enqueue([NewJob(name="job", queue=rng.choice(QUEUES),
                              due_at=now + timedelta(seconds=rng.randint(-30, 30)),
                              expires_at=now + timedelta(seconds=rng.randint(-40, 40)))
                       for _ in range(rng.randint(1, 6))], now)
    elif kind == "keyed":  # some are refused: a live job holds the key
        store.enqueue([NewJob(name="job", queue=rng.choice(QUEUES), due_at=now,
                              key=f"k{rng.randint(0, 3)}") for _ in range(3)], now)
    elif kind == "claim":
        store.claim(rng.sample(QUEUES, rng.randint(1, 3)), rng.randint(1, 5), now=now,
                    owner="w", lease_expires_at=now + LEASE)
    elif kind == "claim_with_outcomes":  # the outcomes a claim carries are counted too
        choices: list[Outcome] = [Succeeded(), Succeeded('"r"'), RetryAt(now, "boom"),
                                  DeadLettered("boom"), Quarantined("bad"), Cancelled(),
                                  Snoozed(now + timedelta(seconds=2))]
        outcomes = [(job.lease, rng.choice(choices))
                    for job in rng.sample(held, rng.randint(0, len(held)))]
        store.claim(rng.sample(QUEUES, rng.randint(1, 3)), rng.randint(0, 5), now=now,
                    owner="w", lease_expires_at=now + LEASE, outcomes=outcomes)
    elif kind == "complete" and held:  # a stale lease among them finishes nothing
        leases = [job.lease for job in rng.sample(held, rng.randint(1, len(held)))]
        store.complete([*leases, Lease(leases[0].job_id, "other", 1)], now)
    elif kind == "snooze" and lease:
        store.snooze(lease, now, now + timedelta(seconds=rng.randint(0, 5)))
    elif kind == "retry" and lease:
        store.retry(lease, now, now + timedelta(seconds=5), "boom")
    elif kind == "dead_letter" and lease:
        store.dead_letter(lease, now, "boom")
    elif kind == "quarantine" and lease:
        store.quarantine(lease, now, "bad")
    elif kind == "cancel_leased" and lease:
        store.cancel_leased(lease, now, "cancelled")
    elif kind == "release" and held:
        store.release([job.lease for job in held[:2]], now)
    elif kind == "cancel":
        scheduled = store.list_jobs(state=JobState.SCHEDULED, limit=10)
        if scheduled:
            store.cancel(rng.choice(scheduled).id, now)
    elif kind == "requeue":
        dead = store.list_jobs(state=JobState.DEAD_LETTERED, limit=10)
        if dead:
            store.requeue(rng.choice(dead).id, now)
    elif kind == "requeue_many":
        store.requeue_many(state=rng.choice([JobState.CANCELLED, JobState.QUARANTINED]),
                           queue=rng.choice([None, *QUEUES]), now=now)
    elif kind == "purge":
        store.purge([JobState.SUCCEEDED, JobState.DEAD_LETTERED, JobState.CANCELLED],
                    now, rng.randint(1, 4))
    elif kind == "expire":
        later = now + LEASE
        for job in store.find_expired_leases(later, 3):
            store.expire_lease(job.lease, later, rng.choice([None, later]), "LeaseExpired")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_counts_equal_a_full_count_after_a_random_walk(store: Store, seed: int) -> None:
    # Given a seeded sequence of every kind of change, on a clock that moves forward
    rng = random.Random(seed)
    now = T0
    for _ in range(60):
        # When one more change is made
        step(store, rng, now)
        now += timedelta(seconds=rng.randint(0, 3))
        # Then the counts and the Queue view equal a count of the rows
        assert_counts_exact(store, now)


def test_counts_stay_exact_under_concurrent_claimers(open_stores: OpenStores) -> None:
    # Given 120 due jobs over three Queues and four claimers, each with its own store
    stores = open_stores(4)
    stores[0].enqueue([NewJob(name="job", queue=QUEUES[i % 3], due_at=T0) for i in range(120)],
                      T0)

    # When they all claim and complete at once until nothing is left
    def worker(index: int) -> Callable[[], int]:
        def run() -> int:
            done = 0
            while jobs := stores[index].claim(list(QUEUES), 4, now=T0, owner=f"w{index}",
                                               lease_expires_at=T0 + LEASE):
                done += stores[index].complete([job.lease for job in jobs[::2]], T0)
            return done

        return run

    completed = sum(run_together([worker(i) for i in range(4)]))

    # Then the counts equal a full count: the completed ones succeeded, the rest are leased
    assert_counts_exact(stores[0], T0)
    assert sum(n for (_, state), n in stores[0].count_jobs().items()
               if state is JobState.SUCCEEDED) == completed


@pytest.mark.parametrize(("ahead", "due"), [(3, 1_200), (1_200, 3), (1_100, 1_200)])
def test_due_is_exact_on_either_side_of_a_thousand(store: Store, ahead: int, due: int) -> None:
    # Given a Queue with `due` jobs due now and `ahead` jobs scheduled later (the view
    # walks at most 1,000 of one side before it counts another way), and a claimed one
    store.enqueue([NewJob(name="job", queue="q", due_at=T0 - timedelta(seconds=i % 7))
                   for i in range(due + 1)], T0)
    store.enqueue([NewJob(name="job", queue="q", due_at=T0 + timedelta(seconds=1 + i % 7))
                   for i in range(ahead)], T0)
    store.claim(["q"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    # When the Queues are viewed at T0
    (info,) = store.queue_infos(T0)
    # Then every count is exact
    assert info.due == due
    assert info.counts[JobState.SCHEDULED] == due + ahead
    assert info.counts[JobState.LEASED] == 1
    assert info.oldest_due_at == min(job.due_at for job in every_job(store)
                                     if job.state is JobState.SCHEDULED and job.due_at <= T0)


def test_counts_stay_exact_when_one_write_touches_hundreds_of_queues(store: Store) -> None:
    # Given one enqueue of a job into each of 700 Queues (more (Queue, state) pairs than
    # one counting statement takes), then a claim of 30 of them
    names = [f"q{i:03}" for i in range(700)]
    store.enqueue([NewJob(name="job", queue=name, due_at=T0) for name in names], T0)
    claimed = store.claim(names[:30], 30, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    # When a claim of 20 more Queues carries the successes of the first 25, and a complete
    # ends the other 5
    store.claim(names[30:50], 20, now=T0, owner="w", lease_expires_at=T0 + LEASE,
                outcomes=[(job.lease, Succeeded()) for job in claimed[:25]])
    assert store.complete([job.lease for job in claimed[25:]], T0) == 5
    # Then the counts equal a full count of the rows
    assert_counts_exact(store, T0)
    counts = store.count_jobs()
    assert sum(n for (_, state), n in counts.items() if state is JobState.SUCCEEDED) == 30
    assert sum(n for (_, state), n in counts.items() if state is JobState.LEASED) == 20


def test_counts_stay_exact_through_a_workflow(store: Store) -> None:
    # Given parents, children inserted waiting, and one inserted cancelled at once
    now = T0
    good, bad = store.enqueue([NewJob("job", "a", now), NewJob("job", "a", now)], now)
    waiting = store.enqueue([NewJob("job", "b", now, parents=(good,)),
                             NewJob("job", "b", now, parents=(good, bad)),
                             NewJob("job", "c", now, parents=(bad,), after_outcome="finished")],
                            now)
    grandchild, = store.enqueue([NewJob("job", "c", now, parents=(waiting[1],))], now)
    assert_counts_exact(store, now)
    assert store.count_jobs()[("b", JobState.WAITING)] == 2
    leases = {job.id: job.lease for job in store.claim(["a"], 10, now=now, owner="w",
                                                       lease_expires_at=now + LEASE)}
    # When one parent dead-letters (a child and its own child cancelled, one waits on)
    assert store.dead_letter(leases[bad], now, "boom")
    assert_counts_exact(store, now)
    # And the other succeeds (the last waiting children scheduled)
    assert store.complete([leases[good]], now) == 1
    assert_counts_exact(store, now)
    # Then nothing waits, and a child inserted cancelled is counted cancelled
    store.enqueue([NewJob("job", "c", now, parents=(bad,))], now)
    assert_counts_exact(store, now)
    counts = store.count_jobs()
    assert JobState.WAITING not in {state for _, state in counts}
    assert counts[("c", JobState.CANCELLED)] == 2 and grandchild
