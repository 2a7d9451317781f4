"""The meta rule (rota.core.meta): JSON equality with strict types, and the needle the
SQLite store's search tests first, which every matching job's stored text contains."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rota.core.meta import encode_meta, json_equal, meta_matches, meta_needle

# Texts a store can keep: no NUL, no lone surrogate (encode_meta refuses both); quotes,
# backslashes and control characters included, which JSON escapes.
texts = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
                max_size=4)
numbers = st.integers(-10, 10) | st.integers() | st.floats(allow_nan=False,
                                                             allow_infinity=False) | \
    st.sampled_from([0.0, -0.0, 42.0, 1e15, 1e16, 1e20, 10**16, 10**20, 123457])
scalars = st.none() | st.booleans() | numbers | texts
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(texts, inner, max_size=3), max_leaves=8)
objects = st.dictionaries(texts, values, min_size=1, max_size=4)


def test_types_are_strict_and_numbers_compare_by_value() -> None:
    assert json_equal(42, 42.0) and not json_equal(42, "42")
    assert not json_equal(True, 1) and not json_equal(0, False) and json_equal(False, False)
    assert not json_equal(None, 0) and json_equal(None, None)
    assert json_equal({"a": [1, {"b": 2}]}, {"a": [1.0, {"b": 2}]})
    assert not json_equal([1, 2], [2, 1]) and not json_equal({"a": 1}, {"a": 1, "b": 2})


def equal_to(value: Any) -> st.SearchStrategy[Any]:
    """`value`, or an equal number of the other type (42 for 42.0, 42.0 for 42)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return st.just(value)
    other: Any = value
    if isinstance(value, int) and abs(value) <= 2**53:
        other = float(value)
    elif isinstance(value, float) and value.is_integer():
        other = int(value)
    return st.sampled_from([value, other])


@given(objects, st.data())
def test_the_needle_is_in_every_matching_jobs_text(meta: dict[str, Any],
                                                   data: st.DataObject) -> None:
    # Given a filter drawn from the job's own keys (so it matches), in any order
    keys = data.draw(st.lists(st.sampled_from(sorted(meta)), min_size=1, unique=True))
    wanted = {key: data.draw(equal_to(meta[key])) for key in keys}
    assert meta_matches(meta, wanted)
    # Then the text the store keeps holds the needle
    text = encode_meta(meta)
    assert text is not None and meta_needle(wanted) in text


def test_the_needle_holds_a_value_written_one_way() -> None:
    # A str wins, then a number or a constant; zero and lists leave the key alone
    assert meta_needle({"order": 42, "tenant": "acme"}) == '"tenant":"acme"'
    assert meta_needle({"order": 123457}) == '"order":123457'
    assert meta_needle({"order": 42.0}) == '"order":42'
    assert meta_needle({"vip": True}) == '"vip":true'
    assert meta_needle({"n": 0}) == '"n":'
    assert meta_needle({"tags": ["a"]}) == '"tags":'
