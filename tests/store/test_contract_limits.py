"""The store contract for a read's `limit` of zero or less: no rows, on every store (never
"no limit", never one row), run unchanged against every store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import JobState, NewJob
from rota.store import Store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=1)


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_of_zero_or_less_lists_no_jobs(store: Store, limit: int) -> None:
    # Given three jobs, one finished
    ids = store.enqueue([NewJob("job", "q", T0), NewJob("job", "q", T0),
                         NewJob("job", "q", T0)], T0)
    assert store.cancel(ids[0], T0)
    # Then every listing with such a limit, filtered or not, in either order, is empty
    for options in ({}, {"newest": True}, {"queue": "q"}, {"name": "job"},
                    {"state": JobState.CANCELLED, "newest": True}, {"offset": 1}):
        assert store.list_jobs(limit=limit, **options) == []
    # And a positive limit still lists the jobs
    assert [job.id for job in store.list_jobs(limit=2)] == ids[:2]


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_of_zero_or_less_finds_no_expired_lease(store: Store, limit: int) -> None:
    # Given two leases expired at T0 + 2 min
    store.enqueue([NewJob("job", "q", T0), NewJob("job", "q", T0)], T0)
    assert len(store.claim(["q"], 2, now=T0, owner="w", lease_expires_at=T0 + LEASE)) == 2
    later = T0 + 2 * LEASE
    # Then the sweep's read with such a limit finds none, and with a positive one both
    assert store.find_expired_leases(later, limit) == []
    assert len(store.find_expired_leases(later, 5)) == 2
