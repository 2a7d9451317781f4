"""The store contract for Worker Group policies set while workers run
(`GroupPolicyStore`), run unchanged against every store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from rota import Strict, Weighted
from rota.core.group_policies import StoredPolicy
from rota.store import Store
from rota.store.base import GroupPolicyStore

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
WEIGHTED_INVALID = r"^Weighted dispatch needs at least one queue, all weights >= 1\.$"


def policies(store: Store) -> GroupPolicyStore:
    assert isinstance(store, GroupPolicyStore)
    return store


def test_a_set_policy_reads_back_with_its_version(store: Store) -> None:
    # Given no stored policy
    stored = policies(store)
    assert stored.group_policy("tenants") is None
    assert stored.group_policy_versions() == {}
    # When one is set, then replaced
    assert stored.set_group_policy("tenants", Weighted([("a", 5), ("b", 1)]), T0) == 1
    first = stored.group_policy("tenants")
    assert stored.set_group_policy("tenants", Strict("b", "a"), T0 + timedelta(1)) == 2
    # Then each reads back as set, with the version the set returned
    assert first == StoredPolicy("tenants", "weighted", ("a", "b"), (5, 1), 1, T0)
    assert first.policy() == Weighted([("a", 5), ("b", 1)])
    second = stored.group_policy("tenants")
    assert second == StoredPolicy("tenants", "strict", ("b", "a"), None, 2, T0 + timedelta(1))
    assert stored.group_policy_versions() == {"tenants": 2}


def test_a_clear_moves_the_version_on_and_reads_as_none(store: Store) -> None:
    stored = policies(store)
    stored.set_group_policy("g", Strict("a"), T0)
    # When it is cleared (twice) and set again
    assert stored.set_group_policy("g", None, T0) == 2
    assert stored.group_policy("g") is None
    assert stored.set_group_policy("g", None, T0) == 3
    assert stored.group_policy_versions() == {"g": 3}
    # Then the version never goes back: a worker that knew 1 or 2 sees the change
    assert stored.set_group_policy("g", Strict("b"), T0) == 4
    assert stored.group_policy("g") == StoredPolicy("g", "strict", ("b",), None, 4, T0)


def test_groups_are_independent(store: Store) -> None:
    stored = policies(store)
    stored.set_group_policy("one", Strict("a"), T0)
    stored.set_group_policy("two", Strict("b"), T0)
    stored.set_group_policy("two", Strict("c"), T0)
    assert stored.group_policy_versions() == {"one": 1, "two": 2}
    one = stored.group_policy("one")
    assert one is not None and one.policy() == Strict("a")


def test_10000_queues_in_one_call(store: Store) -> None:
    stored = policies(store)
    policy = Weighted([(f"tenant-{n}", 1 + n % 7) for n in range(10_000)])
    stored.set_group_policy("tenants", policy, T0)
    row = stored.group_policy("tenants")
    assert row is not None and row.policy() == policy


@pytest.mark.parametrize(("policy", "error", "match"), [
    (Weighted([]), ValueError, WEIGHTED_INVALID),
    (Weighted([("a", 0)]), ValueError, WEIGHTED_INVALID),
    (Strict(), ValueError, r"^Strict dispatch needs at least one queue\.$"),
    (Strict("a", "a"), ValueError, "named twice"),
    (Strict("bad name"), ValueError, "Queue name"),
    ("a=1", TypeError, "must be a DispatchPolicy"),
])
def test_an_invalid_policy_is_refused_as_at_group_start_and_not_written(
    store: Store, policy: object, error: type[Exception], match: str,
) -> None:
    stored = policies(store)
    with pytest.raises(error, match=match) as raised:
        stored.set_group_policy("g", policy, T0)  # type: ignore[arg-type]
    if error is ValueError and "dispatch needs" in match:
        assert "Worker Group 'g'" in str(raised.value.__cause__)
    assert stored.group_policy_versions() == {}


@pytest.mark.parametrize("call", [
    lambda s: s.set_group_policy("", Strict("a"), T0),
    lambda s: s.set_group_policy("has space", None, T0),
    lambda s: s.group_policy("has\nnewline"),
    lambda s: s.set_group_policy("g", Strict("a"), datetime(2026, 1, 1)),  # naive
])
def test_bad_group_names_and_naive_times_are_refused(
    store: Store, call: Callable[[GroupPolicyStore], object],
) -> None:
    with pytest.raises(ValueError, match=r"Worker Group name|timezone-aware"):
        call(policies(store))
    assert policies(store).group_policy_versions() == {}


def test_every_store_sharing_the_data_sees_the_change(
    open_stores: Callable[[int], list[Store]],
) -> None:
    first, second = (policies(s) for s in open_stores(2))
    first.set_group_policy("g", Weighted([("a", 2)]), T0)
    assert second.group_policy_versions() == {"g": 1}
    row = second.group_policy("g")
    assert row is not None and row.policy() == Weighted([("a", 2)])
