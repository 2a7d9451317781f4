"""The store contract for Queue families: `due_queues` finds the members of a family that
have due work, on every store, in name order, after a cursor, at most `limit`.

A family (`"tenant-*"`) holds every Queue whose name starts with its prefix; a group
serving one learns its members from wake-up hints and from this read
(rota.core.dispatch.members), so it must name exactly the Queues with a due scheduled
job: not one with only later, leased or finished jobs, not one outside the prefixes.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from rota.core.jobs import NewJob
from rota.store import Store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)


def job(queue: str, due_at: datetime = T0) -> NewJob:
    return NewJob(name="task", queue=queue, due_at=due_at)


def test_due_queues_names_the_members_with_due_work_in_name_order(store: Store) -> None:
    store.enqueue([job("tenant-b"), job("tenant-a"), job("tenant-a"), job("internal"),
                   job("tenant-later", T0 + timedelta(hours=1)), job("tenants"),
                   job("tenant-c")], T0)
    assert store.due_queues(["tenant-"], T0) == ["tenant-a", "tenant-b", "tenant-c"]
    # Another prefix, two prefixes, every Queue (the family "*").
    assert store.due_queues(["tenants"], T0) == ["tenants"]
    assert store.due_queues(["internal", "tenant-c"], T0) == ["internal", "tenant-c"]
    assert store.due_queues([""], T0) == [
        "internal", "tenant-a", "tenant-b", "tenant-c", "tenants"]
    # The later job is due an hour on.
    assert "tenant-later" in store.due_queues(["tenant-"], T0 + timedelta(hours=1))
    assert store.due_queues([], T0) == []


def test_due_queues_leaves_out_queues_whose_jobs_are_leased_or_finished(store: Store) -> None:
    store.enqueue([job("tenant-a"), job("tenant-b")], T0)
    claimed = store.claim(["tenant-a"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    assert store.due_queues(["tenant-"], T0) == ["tenant-b"]
    store.complete([claimed[0].lease], T0)
    assert store.due_queues(["tenant-"], T0) == ["tenant-b"]


def test_due_queues_pages_by_name_after_a_cursor(store: Store) -> None:
    names = [f"tenant-{number:03d}" for number in range(25)]
    store.enqueue([job(name) for name in reversed(names)], T0)
    assert store.due_queues(["tenant-"], T0, limit=10) == names[:10]
    assert store.due_queues(["tenant-"], T0, after=names[9], limit=10) == names[10:20]
    assert store.due_queues(["tenant-"], T0, after=names[19], limit=10) == names[20:]
    assert store.due_queues(["tenant-"], T0, after=names[-1]) == []
    assert store.due_queues(["tenant-"], T0, limit=0) == []


def test_due_queues_counts_a_paused_member(store: Store) -> None:
    """Paused or not: a member joins the group's Queues, and its claims then honour the
    pause as any Queue's do."""
    store.enqueue([job("tenant-a")], T0)
    store.pause_queue("tenant-a")
    assert store.due_queues(["tenant-"], T0) == ["tenant-a"]


def test_due_queues_equals_a_scan_of_the_jobs_after_random_changes(store: Store) -> None:
    rng = random.Random(7)
    queues = [f"{family}-{number}" for family in ("tenant", "team", "x") for number in range(6)]
    now = T0
    for _ in range(40):
        store.enqueue([job(rng.choice(queues), now + timedelta(seconds=rng.randint(-5, 5)))
                       for _ in range(rng.randint(1, 4))], now)
        if rng.random() < 0.5:
            claimed = store.claim(rng.sample(queues, 3), 2, now=now, owner="w",
                                  lease_expires_at=now + LEASE)
            if claimed and rng.random() < 0.5:
                store.complete([claimed[0].lease], now)
        now += timedelta(seconds=1)
        scheduled = store.list_jobs(limit=100_000)
        for prefixes in (["tenant-"], ["team-", "x-"], [""]):
            truth = sorted({j.queue for j in scheduled
                            if j.state.value == "scheduled" and j.due_at <= now
                            and any(j.queue.startswith(p) for p in prefixes)})
            assert store.due_queues(prefixes, now) == truth
