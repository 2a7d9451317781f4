"""The check of `set_group_policy`'s group (rota.core.group_policies.check_known_group):
a group nobody defines or runs is refused, naming the known groups and the way to force."""

from __future__ import annotations

import pytest

from rota.core.group_policies import check_known_group


def test_a_known_group_passes() -> None:
    check_known_group("tenants", {"tenants", "io"}, "force=True")


def test_an_unknown_group_names_the_known_ones_sorted_and_the_fix() -> None:
    with pytest.raises(ValueError) as raised:
        check_known_group("tenats", {"tenants", "io"}, "force=True")
    message = str(raised.value)
    assert message.startswith("Worker Group 'tenats' is not known here")
    assert "known groups: 'io', 'tenants'" in message
    assert "force=True" in message


def test_with_no_group_known_it_says_so() -> None:
    with pytest.raises(ValueError, match="no Worker Group is known yet") as raised:
        check_known_group("g", set(), "--force")
    assert "--force" in str(raised.value)


def test_many_known_groups_are_counted_after_the_first_ones() -> None:
    with pytest.raises(ValueError, match=r"'g019', \.\.\. \(5 more\)"):
        check_known_group("x", {f"g{n:03}" for n in range(25)}, "--force")
