"""Job metadata: a small JSON object stored with a job (`configure(meta=...)`), and the
rule `find_jobs(meta=...)` matches it by.

A job's meta is a JSON object with str keys, at most `MAX_META_BYTES` of UTF-8 as compact
JSON text: checked here, before anything is stored, so bad meta never half-writes a job.
A filter matches a job whose meta holds every key of the filter with an equal JSON value
(`json_equal`): types are strict (42 is not "42", true is not 1), numbers compare by value
(42 equals 42.0), objects member by member whatever their order, arrays item by item. Every
store applies this one rule: the memory and SQLite stores call `meta_matches`, PostgreSQL
compares jsonb values, which follow the same rule.

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

JsonValue = Any

# How deep meta may nest: the bound of job arguments (rota.core.jobs.MAX_META_DEPTH).
MAX_META_DEPTH = 100

# The most UTF-8 bytes a job's meta may take as compact JSON text: meta is for finding
# jobs (a tenant, an order id), not for data, which belongs in the job's arguments.
MAX_META_BYTES = 4096

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _problem(value: object, level: int) -> str | None:
    """Why `value` (nested `level` deep) is not a JSON value every store can save; None
    if it is one."""
    if level > MAX_META_DEPTH:
        return f"it is nested more than {MAX_META_DEPTH} levels deep"
    if value is None or isinstance(value, bool | int):
        return None
    if isinstance(value, float):
        return None if value == value and value not in (float("inf"), float("-inf")) \
            else f"{value!r} is not a JSON number"
    if isinstance(value, str):
        return _text_problem(value)
    if isinstance(value, list | tuple):
        for item in value:
            if (problem := _problem(item, level + 1)) is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"key {key!r} is not a str"
            if (problem := _text_problem(key) or _problem(item, level + 1)) is not None:
                return problem
        return None
    return f"{type(value).__name__} {value!r} is not a JSON value"


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return f"{text!r} holds a NUL character (\\x00), which not every store can save"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"{text!r} holds a lone surrogate"
    return None


def checked_meta(meta: object, what: str = "meta") -> dict[str, JsonValue]:
    """`meta` as a dict, if it is a JSON object every store can save.

    Raises:
        TypeError: if it is not a dict (a JSON object), or holds a key that is not a str,
            or a value that is not JSON (naming it).
    """
    if not isinstance(meta, dict):
        raise TypeError(
            f"{what} must be a dict of JSON values with str keys, e.g. "
            f"{what}={{'tenant': 'acme'}}; got {meta!r} ({type(meta).__name__})"
        )
    problem = _problem(meta, 0)
    if problem is not None:
        raise TypeError(
            f"{what} must be a JSON object (str keys; str, int, float, bool, None, lists "
            f"and dicts of them): {problem}"
        )
    return meta


def encode_meta(meta: object) -> str | None:
    """A job's meta as the JSON text to store; None for an empty one (stored as none).

    Raises:
        TypeError: see `checked_meta`.
        ValueError: if the text takes more than `MAX_META_BYTES` bytes of UTF-8.
    """
    checked = checked_meta(meta)
    if not checked:
        return None
    text = _ENCODER.encode(checked)
    size = len(text.encode("utf-8"))
    if size > MAX_META_BYTES:
        raise ValueError(
            f"meta as JSON: {size:,} bytes, over the limit of {MAX_META_BYTES:,} bytes; "
            "keep meta to a few keys you search by (a tenant, an id) and pass data in the "
            "job's arguments"
        )
    return text


def check_meta_json(text: str) -> None:
    """Refuse stored-to-be meta text that is not exactly what `encode_meta` makes (a
    store's caller that built a NewJob by hand): the same errors as `encode_meta`, and a
    ValueError for other spacing or escapes. Stores keep the text as it comes, and the
    SQLite store's search relies on its form (`meta_needle`).

    Raises:
        TypeError, ValueError: see above.
    """
    try:
        value = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        raise TypeError(f"meta must be JSON object text; got {text[:80]!r}") from None
    if encode_meta(value) != text:
        raise ValueError(f"meta text must be as rota.core.meta.encode_meta writes it "
                         f"(compact JSON); got {text[:80]!r}")


def decode_meta(text: object) -> dict[str, JsonValue]:
    """Stored meta text back as a dict; {} for none. Never raises: meta corrupted outside
    rota reads as {}, so reads still show the job."""
    if text is None:
        return {}
    if isinstance(text, dict):  # a driver that decodes JSON itself
        return text
    try:
        value = json.loads(text)  # type: ignore[arg-type]
    except (TypeError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def json_equal(a: JsonValue, b: JsonValue) -> bool:
    """Whether two JSON values are equal: strict types (42 is not "42", true is not 1;
    an int and a float are both numbers, equal by value), objects by their members,
    arrays item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(map(json_equal, a, b))
    if a is None or b is None:
        return a is None and b is None
    return type(a) is type(b) and a == b


def meta_matches(meta: Mapping[str, JsonValue], wanted: Mapping[str, JsonValue]) -> bool:
    """Whether `meta` holds every key of `wanted` with an equal JSON value."""
    return all(key in meta and json_equal(meta[key], value) for key, value in wanted.items())


def _value_text(value: JsonValue) -> str | None:
    """The start of the text of every value equal to `value` as `encode_meta` writes it;
    None when equal values are written in unlike ways (0 and -0.0, 1e16 and 10**16) or
    it is a list or an object."""
    if value is None or isinstance(value, bool | str):
        return _ENCODER.encode(value)
    if isinstance(value, int | float) and value == int(value):
        # 42 is written 42, 42.0 is written 42.0: both start with 42, below 1e15 (Python
        # writes larger floats with an exponent). Zero may be -0.0.
        return str(int(value)) if 0 < abs(value) < 10**15 else None
    if isinstance(value, float):
        return _ENCODER.encode(value)  # no int equals it: only this float, one repr
    return None


def meta_needle(wanted: Mapping[str, JsonValue]) -> str:
    """Text that the stored meta of every job `wanted` matches contains (as
    `encode_meta` writes it: compact, keys and strings escaped one way): `"key":value`
    for the first key whose value is written one way (a str first, then true, false,
    null or a number), else `"key":` of the first key. A cheap first test before
    `meta_matches` (the SQLite store's `instr`); it may also be found in a job that does
    not match (the key nested deeper, 42 in 420), never missed in one that does."""
    texts = [(isinstance(value, str), key, text) for key, value in wanted.items()
             if (text := _value_text(value)) is not None]
    if texts:
        _text_value, key, text = max(texts, key=lambda entry: entry[0])
        return f"{_ENCODER.encode(key)}:{text}"
    return f"{_ENCODER.encode(next(iter(wanted)))}:"


def meta_filter(meta: object) -> dict[str, JsonValue] | None:
    """A `find_jobs(meta=...)` filter checked: None for none (None or {}).

    Raises:
        TypeError: see `checked_meta`.
    """
    if meta is None:
        return None
    return checked_meta(meta, "the meta filter") or None
