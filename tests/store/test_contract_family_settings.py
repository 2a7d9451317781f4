"""The store contract for settings on a Queue family (`"tenant-*"`): pause, limit and rate
apply to every member without a setting of its own of that kind, each member counting its
own leased jobs and taking from its own bucket; a paused family pauses every member; a
member's own limit or rate wins; the longest family holding a member wins; `queue_infos`
shows the settings in force, `family`, and one entry per family with its members counted.
Run unchanged against every store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rota.core.jobs import JobState, NewJob
from rota.core.queue_controls import QueueInfo
from rota.core.rates import QueueRate
from rota.store import Store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=1)
TENANTS = ("tenant-a", "tenant-b", "tenant-c")


def fill(store: Store, queues: tuple[str, ...] = TENANTS, each: int = 5) -> None:
    store.enqueue([NewJob("job", queue, T0) for queue in queues for _ in range(each)], T0)


def claim(store: Store, queues: tuple[str, ...] = TENANTS, limit: int = 100,
          limits: list[int] | None = None, now: datetime = T0) -> dict[str, int]:
    got = store.claim(list(queues), limit, now=now, owner="w", lease_expires_at=now + LEASE,
                      limits=limits)
    taken: dict[str, int] = {}
    for job in got:
        taken[job.queue] = taken.get(job.queue, 0) + 1
    return taken


def info(store: Store, name: str) -> QueueInfo:
    return next(one for one in store.queue_infos(T0) if one.name == name)


@pytest.mark.parametrize("limits", [None, [3, 3, 3], [1, 1, 1]])
def test_a_family_limit_bounds_each_member_on_its_own(store: Store,
                                                      limits: list[int] | None) -> None:
    # Given three tenants with five due jobs each, and "at most 2 per tenant"
    fill(store)
    store.set_queue_limit("tenant-*", 2)
    # When claims ask for everything, twice
    first = claim(store, limits=limits)
    second = claim(store, limits=limits)
    # Then each tenant has at most 2 leased, not 2 for all of them together
    total = {queue: first.get(queue, 0) + second.get(queue, 0) for queue in TENANTS}
    assert total == dict.fromkeys(TENANTS, min(2, 2 if limits is None else 2 * limits[0]))
    assert info(store, "tenant-a").limit == 2
    assert info(store, "tenant-a").family == "tenant-*"


def test_a_members_own_limit_wins_over_its_familys(store: Store) -> None:
    fill(store)
    store.set_queue_limit("tenant-*", 1)
    store.set_queue_limit("tenant-b", 4)
    assert claim(store) == {"tenant-a": 1, "tenant-b": 4, "tenant-c": 1}
    assert info(store, "tenant-b").limit == 4
    assert info(store, "tenant-b").family is None  # only its own settings apply


def test_a_paused_family_pauses_every_member_whatever_its_own_flag(store: Store) -> None:
    fill(store, ("tenant-a", "tenant-b", "other"))
    store.resume_queue("tenant-a")  # its own flag says "not paused"
    store.pause_queue("tenant-*")
    assert claim(store, ("tenant-a", "tenant-b", "other")) == {"other": 5}
    assert info(store, "tenant-a").paused
    assert not info(store, "other").paused
    # And resuming the family serves them again
    store.resume_queue("tenant-*")
    assert claim(store, ("tenant-a", "tenant-b")) == {"tenant-a": 5, "tenant-b": 5}


def test_a_member_paused_on_its_own_stays_paused_when_the_family_resumes(store: Store) -> None:
    fill(store, ("tenant-a", "tenant-b"))
    store.pause_queue("tenant-a")
    store.pause_queue("tenant-*")
    store.resume_queue("tenant-*")
    assert claim(store, ("tenant-a", "tenant-b")) == {"tenant-b": 5}


def test_a_new_member_gets_the_familys_settings_at_its_first_enqueue(store: Store) -> None:
    store.set_queue_limit("tenant-*", 1)
    fill(store, ("tenant-new",), 3)  # a Queue the store did not know when the limit was set
    assert claim(store, ("tenant-new",)) == {"tenant-new": 1}
    assert info(store, "tenant-new").limit == 1


def test_the_longest_family_holding_a_member_wins(store: Store) -> None:
    fill(store, ("tenant-1", "tenant-vip-1"))
    store.set_queue_limit("tenant-*", 1)
    store.set_queue_limit("tenant-vip-*", 3)
    assert claim(store, ("tenant-1", "tenant-vip-1")) == {"tenant-1": 1, "tenant-vip-1": 3}
    assert info(store, "tenant-vip-1").family == "tenant-vip-*"
    assert info(store, "tenant-1").family == "tenant-*"


def test_a_family_rate_gives_each_member_its_own_bucket(store: Store) -> None:
    fill(store)
    store.set_queue_rate("tenant-*", QueueRate(2, timedelta(minutes=1), 2))
    # Each tenant takes its own 2 tokens, not 2 for all of them
    assert claim(store) == dict.fromkeys(TENANTS, 2)
    assert claim(store) == {}
    assert info(store, "tenant-a").tokens == 0
    assert info(store, "tenant-a").rate == QueueRate(2, timedelta(minutes=1), 2)
    # A token comes back to each after half a minute
    later = T0 + timedelta(seconds=30)
    assert claim(store, now=later) == dict.fromkeys(TENANTS, 1)


def test_a_members_own_rate_wins_over_its_familys(store: Store) -> None:
    fill(store)
    store.set_queue_rate("tenant-*", QueueRate(1, timedelta(minutes=1), 1))
    store.set_queue_rate("tenant-c", QueueRate(3, timedelta(minutes=1), 3))
    assert claim(store) == {"tenant-a": 1, "tenant-b": 1, "tenant-c": 3}


def test_setting_a_family_rate_again_refills_its_members_buckets(store: Store) -> None:
    fill(store)
    store.set_queue_rate("tenant-*", QueueRate(1, timedelta(hours=1), 1))
    assert claim(store) == dict.fromkeys(TENANTS, 1)
    store.set_queue_rate("tenant-*", QueueRate(1, timedelta(hours=1), 1))
    assert claim(store) == dict.fromkeys(TENANTS, 1)
    store.set_queue_rate("tenant-*", None)
    assert claim(store) == dict.fromkeys(TENANTS, 3)


def test_queue_infos_list_each_family_with_its_members_counted(store: Store) -> None:
    fill(store, ("tenant-a", "tenant-b", "other"), 2)
    store.set_queue_limit("tenant-*", 1)
    claim(store, ("tenant-a",))
    infos = store.queue_infos(T0)
    names = [one.name for one in infos]
    assert names == sorted(names)
    family = info(store, "tenant-*")
    assert (family.members, family.limit, family.family) == (2, 1, None)
    assert family.counts[JobState.LEASED] == 1
    assert family.counts[JobState.SCHEDULED] == 3
    assert family.due == 3
    assert info(store, "tenant-a").members is None
    assert info(store, "other").family is None


def test_a_family_without_settings_has_no_entry(store: Store) -> None:
    fill(store, ("tenant-a",), 1)
    store.set_queue_limit("tenant-*", 1)
    store.set_queue_limit("tenant-*", None)
    assert [one.name for one in store.queue_infos(T0)] == ["tenant-a"]
    assert info(store, "tenant-a").family is None


@pytest.mark.parametrize("name", ["a*b", "t*-*", "**"])
def test_a_bad_family_name_is_refused_and_changes_nothing(store: Store, name: str) -> None:
    with pytest.raises(ValueError, match=r"\*"):
        store.set_queue_limit(name, 1)
    with pytest.raises(ValueError, match=r"\*"):
        store.pause_queue(name)
    with pytest.raises(ValueError, match=r"\*"):
        store.set_queue_rate(name, QueueRate(1, timedelta(minutes=1), 1))
    assert store.queue_infos(T0) == []


def test_probes_leave_out_members_of_a_paused_family(store: Store) -> None:
    fill(store, ("tenant-a", "other"), 1)
    store.pause_queue("tenant-*")
    got = store.claim(["other"], 0, now=T0, owner="w", lease_expires_at=T0 + LEASE,
                      probe=["tenant-a", "other"])
    assert set(got.due) == {"other"}
