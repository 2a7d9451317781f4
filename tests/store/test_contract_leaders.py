"""The store contract for leader leases (`LeaderStore`): one holder per name at a time,
taken or renewed by one compare-and-set, given up at once. Run unchanged against every
store; the name says `leader` so that `-k leader` selects it."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from rota.store import Store
from rota.store.base import LeaderLease, LeaderStore

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
TTL = timedelta(seconds=10)
NAME = "maintenance"


def took(lease: LeaderLease | None, owner: str) -> bool:
    return lease is not None and lease.owner == owner


def leaders(store: Store) -> LeaderStore:
    assert isinstance(store, LeaderStore)
    return store


def test_leader_a_free_lease_is_taken_and_read_back(store: Store) -> None:
    stored = leaders(store)
    # Given no leader
    assert stored.leader(NAME, T0) is None
    # When a worker takes the lease
    assert stored.take_leadership(NAME, "w1", T0, TTL) == LeaderLease("w1", T0 + TTL)
    # Then it is the leader until the lease expires, and not after
    assert stored.leader(NAME, T0) == "w1"
    assert stored.leader(NAME, T0 + TTL - timedelta(microseconds=1)) == "w1"
    assert stored.leader(NAME, T0 + TTL) is None


def test_leader_a_live_lease_is_fenced_by_its_owner(store: Store) -> None:
    stored = leaders(store)
    stored.take_leadership(NAME, "w1", T0, TTL)
    # When another worker tries while the lease is live
    taken = stored.take_leadership(NAME, "w2", T0 + TTL - timedelta(microseconds=1), TTL)
    # Then it is refused, told whose lease it is until when, and the lease is untouched
    assert taken == LeaderLease("w1", T0 + TTL)
    assert stored.leader(NAME, T0 + TTL - timedelta(microseconds=1)) == "w1"
    assert stored.leader(NAME, T0 + TTL) is None


def test_leader_the_owner_renews_its_lease(store: Store) -> None:
    stored = leaders(store)
    stored.take_leadership(NAME, "w1", T0, TTL)
    # When the owner renews before expiry
    renewed = stored.take_leadership(NAME, "w1", T0 + timedelta(seconds=3), TTL)
    assert renewed == LeaderLease("w1", T0 + timedelta(seconds=3) + TTL)
    # Then the lease runs from the renewal
    later = T0 + TTL + timedelta(seconds=1)
    assert stored.leader(NAME, later) == "w1"
    assert not took(stored.take_leadership(NAME, "w2", later, TTL), "w2")


def test_leader_an_expired_lease_is_taken_over(store: Store) -> None:
    stored = leaders(store)
    stored.take_leadership(NAME, "w1", T0, TTL)
    # When another worker tries once the lease expired (expires_at <= now)
    assert took(stored.take_leadership(NAME, "w2", T0 + TTL, TTL), "w2")
    # Then it leads, and the old owner's renewal is refused
    assert stored.leader(NAME, T0 + TTL) == "w2"
    late = stored.take_leadership(NAME, "w1", T0 + TTL + timedelta(seconds=1), TTL)
    assert late == LeaderLease("w2", T0 + 2 * TTL)
    assert stored.leader(NAME, T0 + TTL + timedelta(seconds=1)) == "w2"


def test_leader_an_expired_lease_not_taken_over_is_renewed_by_its_owner(store: Store) -> None:
    stored = leaders(store)
    stored.take_leadership(NAME, "w1", T0, TTL)
    # When its owner comes back after expiry and nobody took the lease meanwhile
    assert took(stored.take_leadership(NAME, "w1", T0 + 2 * TTL, TTL), "w1")
    # Then it leads again
    assert stored.leader(NAME, T0 + 2 * TTL) == "w1"


def test_leader_giving_up_frees_the_lease_at_once(store: Store) -> None:
    stored = leaders(store)
    stored.take_leadership(NAME, "w1", T0, TTL)
    # When another worker tries to give it up, nothing changes
    assert stored.give_up_leadership(NAME, "w2") is False
    assert stored.leader(NAME, T0) == "w1"
    # When the owner gives it up
    assert stored.give_up_leadership(NAME, "w1") is True
    # Then nobody leads, another worker takes it before the TTL, and giving up again is
    # a no-op
    assert stored.leader(NAME, T0) is None
    assert stored.give_up_leadership(NAME, "w1") is False
    assert took(stored.take_leadership(NAME, "w2", T0 + timedelta(seconds=1), TTL), "w2")
    assert stored.leader(NAME, T0 + timedelta(seconds=1)) == "w2"


def test_leader_names_are_independent(store: Store) -> None:
    stored = leaders(store)
    assert took(stored.take_leadership("one", "w1", T0, TTL), "w1")
    assert took(stored.take_leadership("two", "w2", T0, TTL), "w2")
    assert stored.give_up_leadership("two", "w1") is False
    assert (stored.leader("one", T0), stored.leader("two", T0)) == ("w1", "w2")


@pytest.mark.parametrize("bad", [
    lambda s: s.take_leadership("", "w1", T0, TTL),
    lambda s: s.take_leadership(NAME, "", T0, TTL),
    lambda s: s.take_leadership(NAME, "w1", T0, timedelta(0)),
    lambda s: s.take_leadership(NAME, "w1", T0.replace(tzinfo=None), TTL),
    lambda s: s.leader(NAME, T0.replace(tzinfo=None)),
])
def test_leader_bad_input_is_a_value_error(store: Store,
                                           bad: Callable[[LeaderStore], object]) -> None:
    stored = leaders(store)
    with pytest.raises(ValueError):
        bad(stored)
    assert stored.leader(NAME, T0) is None


def test_leader_concurrent_takers_elect_exactly_one(
        open_stores: Callable[[int], list[Store]]) -> None:
    # Given eight connections (threads) on one store
    stores = [leaders(one) for one in open_stores(8)]

    def race(now: datetime) -> list[bool]:
        with ThreadPoolExecutor(len(stores)) as pool:
            return list(pool.map(
                lambda item: took(item[1].take_leadership(NAME, f"w{item[0]}", now, TTL),
                                  f"w{item[0]}"),
                enumerate(stores)))

    # When they all race for the free lease, and again once it expired
    for now in (T0, T0 + TTL):
        results = race(now)
        # Then each time exactly one takes it, the one the store names
        assert results.count(True) == 1
        assert stores[0].leader(NAME, now) == f"w{results.index(True)}"
