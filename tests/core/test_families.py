"""The pure rules of Queue families (rota.core.families), against plain references written
from the contract's sentences: a name ending in `*` holds every Queue whose name starts
with what comes before it; the first entry that holds a Queue serves it; an entry that an
earlier one holds entirely is refused; ties go by entry position, then member name.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from rota.core.dispatch.members import Membership
from rota.core.families import PolicyEntries, holds, validate_entry
from rota.core.policy import Strict, Weighted, served_queues

# Short names over a small alphabet, so that prefixes overlap often.
names = st.text(alphabet="ab-", min_size=1, max_size=4)
prefixes = st.text(alphabet="ab-", max_size=3)
entries = st.lists(st.one_of(names, prefixes.map(lambda p: p + "*")), min_size=1,
                   max_size=6)


def first_holding(written: list[str], queue: str) -> int | None:
    return next((index for index, entry in enumerate(written)
                 if entry == queue or (entry.endswith("*") and queue.startswith(entry[:-1]))),
                None)


def held_entirely(earlier: str, later: str) -> bool:
    """Every Queue `later` names is one `earlier` holds."""
    if not earlier.endswith("*"):
        return earlier == later
    return later.rstrip("*").startswith(earlier[:-1]) if later.endswith("*") else \
        later.startswith(earlier[:-1])


def valid(written: list[str]) -> bool:
    try:
        PolicyEntries(written).check()
    except ValueError:
        return False
    return True


@given(entries, names)
def test_the_first_entry_holding_a_queue_serves_it(written: list[str], queue: str) -> None:
    assert PolicyEntries(written).entry_of(queue) == first_holding(written, queue)
    assert holds(written[0], queue) == (first_holding(written[:1], queue) == 0)


@given(entries)
def test_an_entry_held_entirely_by_an_earlier_one_is_refused(written: list[str]) -> None:
    refused = any(held_entirely(written[i], written[j])
                  for j in range(len(written)) for i in range(j))
    if refused:
        with pytest.raises(ValueError, match=r"named twice|already holds every Queue"):
            PolicyEntries(written).check()
    else:
        PolicyEntries(written).check()


@given(entries, st.lists(names, max_size=8))
def test_the_queues_served_are_in_entry_then_name_order(written: list[str],
                                                        members: list[str]) -> None:
    assume(valid(written))
    assert PolicyEntries(written).expand(members) == sorted(
        {(name, written.index(name)) for name in written if not name.endswith("*")}
        | {(member, first_holding(written, member)) for member in members
           if (index := first_holding(written, member)) is not None
           and written[index].endswith("*")},
        key=lambda pair: (pair[1], pair[0]))


@pytest.mark.parametrize("entry", ["a*b", "t*-*", "**", "*a*", "x y*", "a\n*"])
def test_a_star_or_whitespace_inside_a_family_is_refused(entry: str) -> None:
    with pytest.raises(ValueError):
        validate_entry(entry)


@pytest.mark.parametrize("entry", ["*", "tenant-*", "tenant-1"])
def test_families_and_queue_names_are_valid_entries(entry: str) -> None:
    assert validate_entry(entry) == entry


def test_a_member_joins_once_whether_hinted_or_found() -> None:
    membership = Membership(Weighted([("t-b", 5), ("t-*", 1), ("u", 2)]))
    assert membership.hinted("t-a") and not membership.hinted("t-b")
    assert not membership.hinted("u") and not membership.hinted("v")
    assert membership.take_joining() and not membership.take_joining()
    assert not membership.join(["t-a", "u", "v"]) and membership.join(["t-c"])
    assert membership.expanded() == Weighted([("t-b", 5), ("t-a", 1), ("t-c", 1), ("u", 2)])
    assert not membership.hinted("t-a")  # known: no second join


def test_a_policy_without_families_is_its_own_expansion() -> None:
    policy = Strict("a", "b")
    assert Membership(policy).expanded() is policy
    assert served_queues(policy, ["c"]) == [("a", None), ("b", None)]
    assert served_queues(Strict("x-*"), ["x-2", "x-1", "y"]) == [("x-1", None), ("x-2", None)]


def test_a_family_member_is_served_by_the_groups_whose_family_holds_it() -> None:
    from rota.core.queue_controls import QueueInfo
    from rota.core.serving import entry_for, serving_groups, unserved_with_due_jobs

    serving = {"tenants": Weighted([("t-vip", 3), ("t-*", 1)]),
               "urgent": Strict("t-vip", "u"), "all": Strict("*")}
    assert serving_groups("t-vip", serving) == {"tenants": 3, "urgent": None, "all": None}
    assert serving_groups("t-1", serving) == {"tenants": 1, "all": None}
    assert serving_groups("v", serving) == {"all": None}
    assert entry_for(serving["tenants"], "t-1") == ("t-*", 1)
    del serving["all"]
    infos = [QueueInfo(name=name, due=1) for name in ("t-1", "u", "v")]
    assert [info.name for info in unserved_with_due_jobs(infos, serving)] == ["v"]


def test_a_simulation_serves_the_members_its_backlog_names() -> None:
    from rota.core.simulation import simulate

    family = simulate(Weighted([("t-a", 2), ("t-*", 1)]), 1, 8,
                      {"t-a": 4, "t-c": 4, "t-b": 4})
    listed = simulate(Weighted([("t-a", 2), ("t-b", 1), ("t-c", 1)]), 1, 8,
                      {"t-a": 4, "t-c": 4, "t-b": 4})
    assert [p.order for p in family.passes] == [p.order for p in listed.passes]
    with pytest.raises(ValueError, match="does not serve"):
        simulate(Strict("t-*"), 1, 1, {"u": 1})
