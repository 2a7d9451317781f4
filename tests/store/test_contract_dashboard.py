"""The store contract for what the dashboard reads beyond the jobs API: `due_position`,
run unchanged against every store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rota.core.jobs import NewJob
from rota.store import Store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=1)


def test_due_position_counts_the_due_jobs_a_claim_takes_first(store: Store) -> None:
    # Given Queue q with jobs due at T0-2s, T0-1s (twice), T0 and T0+60s, and Queue r
    ids = store.enqueue([
        NewJob("job", "q", T0 - timedelta(seconds=1)),   # 2nd (due_at), 1st of the tie
        NewJob("job", "q", T0 - timedelta(seconds=2)),   # 1st
        NewJob("job", "q", T0 - timedelta(seconds=1)),   # 3rd (same due time, higher id)
        NewJob("job", "q", T0),                          # 4th
        NewJob("job", "q", T0 + timedelta(seconds=60)),  # not due at T0
        NewJob("job", "r", T0 - timedelta(seconds=9)),   # another Queue: never counted
    ], T0)
    # Then each due job's place is the number of due jobs of q ahead of it in claim order
    assert [store.due_position(job_id, T0) for job_id in ids[:4]] == [1, 0, 2, 3]
    assert store.due_position(ids[5], T0) == 0
    # A job not yet due, an unknown one: None
    assert store.due_position(ids[4], T0) is None
    assert store.due_position(10**9, T0) is None
    # When the first job is claimed, it is no longer ahead of anyone, and has no place
    [claimed] = store.claim(["q"], 1, now=T0, owner="w", lease_expires_at=T0 + LEASE)
    assert claimed.id == ids[1]
    assert store.due_position(ids[1], T0) is None
    assert [store.due_position(job_id, T0) for job_id in (ids[0], ids[2], ids[3])] == [0, 1, 2]
    # And a cancelled job is not counted either
    assert store.cancel(ids[0], T0)
    assert store.due_position(ids[3], T0) == 1
