"""The one rule for a valid Queue name (`rota.core.queues.validate_queue_name`), spelled
here character by character: 1 to 200 characters, none of them whitespace, unprintable or
`*` (a name ending in `*` names a Queue family).
The function answers the common case in one pass of C; these tests hold it to the rule."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rota.core.queues import MAX_QUEUE_NAME_LENGTH, validate_queue_name


def valid_by_the_rule(name: str) -> bool:
    return 0 < len(name) <= MAX_QUEUE_NAME_LENGTH and all(
        not char.isspace() and char.isprintable() and char != "*" for char in name)


def accepted(name: object) -> bool:
    try:
        return validate_queue_name(name) is name
    except ValueError:
        return False


def test_every_character_of_unicode_inside_a_name_is_judged_by_the_rule() -> None:
    wrong = [hex(code) for code in range(sys.maxunicode + 1)
             if accepted(f"a{chr(code)}b") != valid_by_the_rule(f"a{chr(code)}b")]
    assert wrong == []


@given(st.text(alphabet=st.characters(codec=None), max_size=210))
def test_any_text_is_accepted_exactly_when_the_rule_says(name: str) -> None:
    assert accepted(name) == valid_by_the_rule(name)


@pytest.mark.parametrize("length", [MAX_QUEUE_NAME_LENGTH, MAX_QUEUE_NAME_LENGTH + 1])
def test_the_length_bound(length: int) -> None:
    assert accepted("q" * length) == (length <= MAX_QUEUE_NAME_LENGTH)


def test_a_str_subclass_is_checked_like_a_str() -> None:
    class Name(str):
        pass

    assert validate_queue_name(Name("tenant-1")) == "tenant-1"
    with pytest.raises(ValueError, match="whitespace"):
        validate_queue_name(Name("tenant 1"))


@pytest.mark.parametrize("bad", [None, 7, b"bytes"])
def test_a_name_that_is_not_a_str_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match="must be a str"):
        validate_queue_name(bad)
