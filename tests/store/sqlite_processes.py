"""Entry points for the processes that tests/store/test_sqlite.py spawns.

Kept apart from the test module so a spawned child imports only rota, not pytest.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from multiprocessing.synchronize import Barrier, Event
from typing import Any

from rota.core.jobs import NewJob
from rota.store import open_store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)


def claim_until_empty(url: str, owner: str, start: Barrier, results: Any) -> None:
    """Claim 5 at a time until the Queue is empty; put (owner, ids) on `results`."""
    store = open_store(url)
    try:
        start.wait()
        claimed: list[int] = []
        while jobs := store.claim(["q"], 5, now=T0, owner=owner, lease_expires_at=T0 + LEASE):
            claimed.extend(job.id for job in jobs)
        results.put((owner, claimed))
    finally:
        store.close()


def open_fresh_and_enqueue(url: str, start: Barrier, results: Any) -> None:
    """Open (and so migrate) the store at once with the others, then enqueue one job."""
    start.wait()
    store = open_store(url)
    try:
        (job_id,) = store.enqueue([NewJob("job", "q", T0)], T0)
        results.put(job_id)
    finally:
        store.close()


def hold_claim_open(url: str, holding: Event, never: Event) -> None:
    """Claim inside a write transaction, then wait to be killed before it commits."""
    from rota.store.sqlite import SQLiteStore
    from rota.store.sqlite.schema import sql as _sql
    from rota.store.sqlite.schema import us as _us

    store = SQLiteStore.from_url(url)
    # Private API on purpose: the test needs a claim caught between UPDATE and COMMIT.
    with store._write("claiming") as conn:
        params = {"queue": "q", "limit": 1, "now": _us(T0), "owner": "doomed", "worker": "doomed",
                  "lease_expires_at": _us(T0 + LEASE)}
        assert conn.execute(_sql("claim"), params).fetchall()
        holding.set()
        never.wait()


def fire_instants(url: str, count: int, start: Barrier, results: Any) -> None:
    """Fire the schedule "nightly" (definition "d1") for `count` instants, one a minute
    after T0, all together with the others; put how many this process fired."""
    store = open_store(url)
    try:
        fire = store.fire_schedule  # type: ignore[attr-defined]
        start.wait()
        fired = 0
        for minute in range(1, count + 1):
            instant = T0 + timedelta(minutes=minute)
            job = NewJob("build-report", "reports", instant, '["daily"]', "{}")
            fired += fire("nightly", "d1", job, instant).fired
        results.put(fired)
    finally:
        store.close()


def claim_at_times(url: str, owner: str, offsets_us: list[int], start: Barrier,
                   results: Any) -> None:
    """Claim 3 of Queue "q" at each virtual time T0 + offset, finishing what it got;
    put (owner, [(offset, jobs got), ...]) on `results`."""
    store = open_store(url)
    try:
        start.wait()
        got: list[tuple[int, int]] = []
        for offset in offsets_us:
            now = T0 + timedelta(microseconds=offset)
            jobs = store.claim(["q"], 3, now=now, owner=owner, lease_expires_at=now + LEASE)
            if jobs:
                store.complete([job.lease for job in jobs], now)
            got.append((offset, len(jobs)))
        results.put((owner, got))
    finally:
        store.close()


def finish_parents_one_by_one(url: str, start: Barrier, results: Any) -> None:
    """Claim Queue "p" one job at a time, succeeding odd ids and dead-lettering even
    ones, until it is empty; put ("finished", ids) on `results`."""
    store = open_store(url)
    try:
        start.wait()
        finished: list[int] = []
        while jobs := store.claim(["p"], 1, now=T0, owner="f", lease_expires_at=T0 + LEASE):
            lease = jobs[0].lease
            if lease.job_id % 2:
                store.complete([lease], T0)
            else:
                store.dead_letter(lease, T0, "Boom: failed")
            finished.append(lease.job_id)
        results.put(("finished", finished))
    finally:
        store.close()


def enqueue_children(url: str, pairs: list[tuple[int, int]], start: Barrier,
                     results: Any) -> None:
    """For each pair of parents, enqueue into Queue "c" one child that needs both to
    succeed and one that runs whatever happened; put ("children", ids) on `results`."""
    store = open_store(url)
    try:
        start.wait()
        children: list[int] = []
        for pair in pairs:
            children += store.enqueue([NewJob("job", "c", T0, parents=pair)], T0)
            children += store.enqueue([NewJob("job", "c", T0, parents=pair,
                                              after_outcome="finished")], T0)
        results.put(("children", children))
    finally:
        store.close()
