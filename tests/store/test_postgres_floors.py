"""Claim floors on PostgreSQL: claims skip what this process already claimed, so a
snapshot held elsewhere does not make each claim walk every job claimed since; and no
job is left under a floor (docs/decisions/0068)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from rota.core.jobs import Lease, NewJob

psycopg = pytest.importorskip("psycopg")

from rota.store.postgres import PostgresStore, render_sql  # noqa: E402
from rota.store.postgres.floors import START, ClaimFloors  # noqa: E402
from tests.store.test_postgres import LEASE, T0, Hints, new  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

pytestmark = pytest.mark.postgres

HOUR = timedelta(hours=1)


@pytest.fixture
def admin(pg_url: str) -> Iterator[Any]:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        yield conn


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def worker(make_store: Callable[..., PostgresStore]) -> Iterator[tuple[PostgresStore, Hints,
                                                                       Clock]]:
    """A store as a worker process uses it: listening for hints (so it keeps floors),
    its floors on a clock the test moves."""
    store = make_store()
    clock = Clock()
    store.claim_floors = ClaimFloors(clock=clock)
    hints = Hints()
    stop = store.listen(hints)
    yield store, hints, clock
    stop()


def enqueue(store: PostgresStore, hints: Hints, jobs: list[NewJob]) -> list[int]:
    """Enqueue and wait for its hint: a claim that overlaps a hint of its Queue leaves the
    floor where it was (floors.py), so tests that look at floors wait first."""
    seen = len(hints.queues)
    ids = store.enqueue(jobs, T0)
    hints.wait_past(seen)
    return ids


def claim(store: PostgresStore, limit: int = 10, owner: str = "w") -> list[int]:
    return [job.id for job in store.claim(["q"], limit, now=T0, owner=owner,
                                          lease_expires_at=T0 + LEASE)]


def test_claims_start_past_what_they_took_while_a_snapshot_is_held(
    worker: tuple[PostgresStore, Hints, Clock], admin: Any, pg_url: str,
) -> None:
    # Given a transaction elsewhere holding back the xmin horizon, and 3,000 jobs claimed
    # and finished since (their index entries stay: vacuum may not remove them)
    store, hints, _ = worker
    with psycopg.connect(pg_url) as holder:
        holder.execute("SELECT txid_current()")
        enqueue(store, hints, [new(due_at=T0 - HOUR + timedelta(seconds=n))
                               for n in range(3000)])
        while claimed := store.claim(["q"], 100, now=T0, owner="w",
                                     lease_expires_at=T0 + LEASE):
            store.complete([Lease(job.id, "w", job.attempt) for job in claimed], T0)
        store.enqueue([new(due_at=T0 + timedelta(seconds=1))], T0)
        # When the next claim's scan is compared from its floor and from the start
        dues, ids = store.claim_floors.positions(["q"])
        assert dues[0] > START
        from_floor = _index_reads(admin, dues[0], ids[0])
        from_start = _index_reads(admin, START, 0)
    # Then from its floor it reads a small fraction of what it reads from the start
    assert from_floor * 10 < from_start, (from_floor, from_start)


def _index_reads(admin: Any, floor_due: object, floor_id: int) -> int:
    """Shared buffers the claim's index scan touches, run and rolled back (EXPLAIN
    ANALYZE)."""
    params = {"queues": "{q}", "limits": "{10}", "limit": 10, "owner": "x", "worker": "x",
              "now": T0 + timedelta(seconds=2), "lease_expires_at": T0 + LEASE,
              "floor_dues": [floor_due], "floor_ids": f"{{{floor_id}}}"}
    with admin.transaction(force_rollback=True):
        plan = "\n".join(str(row[0]) for row in admin.execute(
            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + render_sql("claim", "rota"), params))
    scan = re.search(r"Index Scan using jobs_claimable.*?Buffers: shared hit=(\d+)", plan,
                     re.DOTALL)
    assert scan is not None, plan
    return int(scan[1])


def test_a_job_enqueued_behind_the_floor_is_claimed_once_its_hint_arrives(
    worker: tuple[PostgresStore, Hints, Clock], make_store: Callable[..., PostgresStore],
) -> None:
    # Given a worker that claimed everything due (its floor now just before T0)
    store, hints, _ = worker
    enqueue(store, hints, [new()])
    assert len(claim(store)) == 1
    assert claim(store) == []
    # When another process enqueues a job due an hour ago (a late commit, a slow clock)
    (late,) = enqueue(make_store(), hints, [new(due_at=T0 - HOUR)])
    # Then the worker's next claim takes it
    assert claim(store) == [late]


@pytest.mark.parametrize("how", ["release", "retry", "expire_lease", "requeue"])
def test_a_job_handed_back_behind_the_floor_is_claimed_by_another_worker(
    worker: tuple[PostgresStore, Hints, Clock], make_store: Callable[..., PostgresStore],
    how: str,
) -> None:
    # Given a job due an hour ago leased by another worker, and a worker whose floor
    # passed it
    store, hints, _ = worker
    other = make_store()
    (job_id,) = other.enqueue([new(due_at=T0 - HOUR)], T0)
    (job,) = other.claim(["q"], 1, now=T0, owner="other", lease_expires_at=T0 + LEASE)
    enqueue(store, hints, [new()])
    assert len(claim(store)) == 1
    assert claim(store) == []
    lease = Lease(job_id, "other", job.attempt)
    seen = len(hints.queues)
    # When the other worker hands it back at its old due time (or a retry due then)
    if how == "release":
        assert other.release([lease], T0) == 1
    elif how == "retry":
        assert other.retry(lease, T0, T0 - HOUR, "again")
    elif how == "expire_lease":
        assert other.expire_lease(lease, T0 + LEASE, T0 - HOUR, "lease expired")
    else:
        assert other.dead_letter(lease, T0, "no")
        assert other.requeue(job_id, T0 - HOUR)
    hints.wait_past(seen)
    # Then this worker claims it
    assert claim(store) == [job_id]


def test_without_a_listener_claims_keep_no_floor(
    make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store()
    store.enqueue([new(), new()], T0)
    assert len(claim(store)) == 2
    assert store.claim_floors.positions(["q"]) == ([START], [0])
    # ...so a job enqueued behind what it claimed is claimed at once
    (late,) = store.enqueue([new(due_at=T0 - HOUR)], T0)
    assert claim(store) == [late]


def test_a_job_another_claim_locked_then_rolled_back_is_found_within_the_floor_age(
    worker: tuple[PostgresStore, Hints, Clock], admin: Any,
) -> None:
    # Given a job locked by a claim elsewhere (a process that dies before it commits),
    # and a worker that claims past it
    store, hints, clock = worker
    (locked,) = store.enqueue([new(due_at=T0 - HOUR)], T0)
    enqueue(store, hints, [new()])
    with admin.transaction(force_rollback=True):
        admin.execute("SELECT id FROM rota.jobs WHERE id = %s FOR UPDATE", (locked,))
        assert len(claim(store)) == 1
    # When that claim rolls back: the job is claimable again, under the worker's floor
    assert claim(store) == []
    assert store.claim_floors.positions(["q"])[0][0] > T0 - HOUR
    # Then once the floor is a minute old, the next claim hands it to a check and claims
    # from the floor meanwhile; the check lowers the floor to the job, which the next
    # claim takes: it is not lost
    clock.now += store.claim_floors.max_age_s
    claimed = claim(store)
    if not claimed:  # the check answered after this claim read its floor (it mostly does)
        assert wait_until(
            lambda: store.claim_floors.positions(["q"])[0][0] <= T0 - HOUR, 10)
        claimed = claim(store)
    assert claimed == [locked]


def test_a_failed_claim_removes_the_floors_of_its_queues(
    worker: tuple[PostgresStore, Hints, Clock], monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, hints, _ = worker
    enqueue(store, hints, [new()])
    assert len(claim(store)) == 1
    assert store.claim_floors.positions(["q"])[0] != [START]

    def fail(*_: object) -> None:
        raise RuntimeError("the connection broke")

    monkeypatch.setattr(store, "_run", fail)
    with pytest.raises(RuntimeError):
        claim(store)
    assert store.claim_floors.positions(["q"]) == ([START], [0])


def test_a_hint_without_a_position_removes_the_floor(
    worker: tuple[PostgresStore, Hints, Clock], admin: Any,
) -> None:
    # Given a worker with a floor, and a hint as an older rota version sends it
    store, hints, _ = worker
    enqueue(store, hints, [new()])
    assert len(claim(store)) == 1
    (late,) = enqueue(store, hints, [new(due_at=T0 - HOUR)])
    admin.execute("SELECT pg_notify('rota_enqueue', 'r')")
    hints.wait_for("r")
    store.claim_floors.hint("q", None)
    assert store.claim_floors.positions(["q"]) == ([START], [0])
    assert claim(store) == [late]


def test_a_child_released_behind_the_floor_lowers_it_and_is_claimed(
    worker: tuple[PostgresStore, Hints, Clock],
) -> None:
    # Given a child in Queue q waiting for a parent in Queue p, and a worker that claimed
    # everything due in q (its floor at T0)
    store, hints, _ = worker
    (parent,) = store.enqueue([new(queue="p", due_at=T0 - HOUR)], T0)
    (child,) = store.enqueue([NewJob("job", "q", T0 - HOUR, parents=(parent,))], T0)
    enqueue(store, hints, [new()])
    assert len(claim(store)) == 1
    assert store.claim_floors.positions(["q"])[0][0] >= T0 - timedelta(seconds=1)
    # When the parent succeeds half an hour before that: the child is released, due then
    (job,) = store.claim(["p"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    seen = len(hints.queues)
    store.complete([Lease(parent, "w", job.attempt)], T0 - HOUR / 2)
    hints.wait_past(seen)
    # Then the release's hint named that position: the floor is lowered there, not
    # removed (a removed floor costs a scan from the start of the index), and the
    # worker's next claim takes the child
    assert store.claim_floors.positions(["q"])[0] == [T0 - HOUR / 2]
    assert claim(store) == [child]


def test_a_check_looks_from_where_the_last_one_ended_up_to_the_floor(
    make_store: Callable[..., PostgresStore], admin: Any,
) -> None:
    # Given three due jobs a, b, c of Queue q (in index order)
    store = make_store()
    store.migrate()
    a, b, c = store.enqueue([new(due_at=T0 - HOUR + timedelta(seconds=n)) for n in range(3)],
                            T0)
    due = {job_id: T0 - HOUR + timedelta(seconds=n) for n, job_id in enumerate((a, b, c))}

    def check(from_: tuple[object, int], floor: tuple[object, int]) -> list[int]:
        rows = admin.execute(render_sql("floor_check", "rota"), {
            "queues": ["q"], "from_dues": [from_[0]], "from_ids": [from_[1]],
            "floor_dues": [floor[0]], "floor_ids": [floor[1]], "now": T0}).fetchall()
        return [int(row[2]) for row in rows]

    # Then a check finds the first due job at or past where it starts and under the floor
    assert check((START, 0), (due[c], c)) == [a]
    assert check((due[b], b), (T0, 0)) == [b]
    assert check((due[b], b + 1), (T0, 0)) == [c]
    assert check((due[b], b + 1), (due[c], c)) == []
