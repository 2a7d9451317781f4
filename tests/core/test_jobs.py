"""Jobs: the state transition table, and argument encoding that names a bad argument."""

from __future__ import annotations

import itertools
import json

import pytest

from rota import JobState
from rota.core.jobs import (
    TRANSITIONS,
    InvalidTransition,
    JobEvent,
    decode_arguments,
    decode_stored_arguments,
    encode_arguments,
    transition,
)

S, E = JobState, JobEvent
LEGAL = {
    (S.SCHEDULED, E.CLAIM): S.LEASED,
    (S.SCHEDULED, E.CANCEL): S.CANCELLED,
    (S.LEASED, E.COMPLETE): S.SUCCEEDED,
    (S.LEASED, E.RETRY): S.SCHEDULED,
    (S.LEASED, E.RELEASE): S.SCHEDULED,
    (S.LEASED, E.DEAD_LETTER): S.DEAD_LETTERED,
    (S.LEASED, E.QUARANTINE): S.QUARANTINED,
}


def test_job_state_values_are_the_public_names() -> None:
    assert {state.value for state in JobState} == {
        "scheduled", "leased", "succeeded", "dead_lettered", "quarantined", "cancelled"}


def test_the_table_is_exactly_the_documented_one() -> None:
    assert dict(TRANSITIONS) == LEGAL


@pytest.mark.parametrize(("key", "after"), LEGAL.items(), ids=lambda v: str(v))
def test_legal_transitions(key: tuple[JobState, JobEvent], after: JobState) -> None:
    assert transition(*key) is after


ILLEGAL = [key for key in itertools.product(JobState, JobEvent) if key not in LEGAL]


@pytest.mark.parametrize("key", ILLEGAL, ids=lambda k: f"{k[0].value}-{k[1].value}")
def test_illegal_transitions_raise(key: tuple[JobState, JobEvent]) -> None:
    state, event = key
    with pytest.raises(InvalidTransition, match=state.value):
        transition(state, event)


def test_finished_states_have_no_way_out() -> None:
    for state in JobState:
        if state.finished:
            assert not any((state, event) in LEGAL for event in JobEvent)
    assert not JobState.SCHEDULED.finished and not JobState.LEASED.finished


def test_arguments_round_trip_as_json() -> None:
    args_json, kwargs_json = encode_arguments(["a", 1, [1.5, None]], {"flag": True, "d": {}})
    assert json.loads(args_json) == ["a", 1, [1.5, None]]
    assert decode_arguments(args_json, kwargs_json) == (
        ("a", 1, [1.5, None]), {"flag": True, "d": {}})


@pytest.mark.parametrize(
    ("args", "kwargs", "named"),
    [
        ((object(),), {}, "positional argument 0"),
        (("ok", {1, 2}), {}, "positional argument 1"),
        ((), {"when": object()}, "keyword argument 'when'"),
        (("ok",), {"ratio": float("nan")}, "keyword argument 'ratio'"),
        ((b"bytes",), {}, "positional argument 0"),
        (([{"deep": object()}],), {}, "positional argument 0"),
    ],
    ids=["object", "set", "kw-object", "nan", "bytes", "nested"],
)
def test_a_non_json_argument_is_a_type_error_naming_it(
    args: tuple[object, ...], kwargs: dict[str, object], named: str
) -> None:
    with pytest.raises(TypeError, match=named):
        encode_arguments(args, kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs", "named", "why"),
    [
        (({1: 2},), {}, "positional argument 0", "a dict key is not a str"),
        (("ok", [{"a": {None: 1}}]), {}, "positional argument 1", "a dict key is not a str"),
        ((), {"m": {1: "a", "1": "b"}}, "keyword argument 'm'", "a dict key is not a str"),
        (("\ud800",), {}, "positional argument 0", "lone surrogate"),
        ((), {"t": ["x", "\udfff"]}, "keyword argument 't'", "lone surrogate"),
    ],
)
def test_arguments_json_would_change_or_no_store_could_save_are_refused(
    args: tuple[object, ...], kwargs: dict[str, object], named: str, why: str
) -> None:
    # int keys would silently become strings (and 1 / "1" collide); a lone surrogate
    # cannot be stored as UTF-8: both are refused up front, naming the argument
    with pytest.raises(TypeError) as caught:
        encode_arguments(args, kwargs)
    assert named in str(caught.value) and why in str(caught.value)


def test_str_keys_and_non_ascii_text_are_fine() -> None:
    assert encode_arguments(("héllo", {"k": [1, {"n": None}]}), {"x": "日本"}) == (
        '["héllo",{"k":[1,{"n":null}]}]', '{"x":"日本"}')


@pytest.mark.parametrize(("args_json", "kwargs_json", "problem"), [
    ("[1, ", "{}", "JSONDecodeError"),
    ('{"a": 1}', "{}", "args hold a dict"),
    ("[]", "[1]", "kwargs hold a list"),
    (7, "{}", "stored as int"),
    ("[" * 100_000 + "]" * 100_000, "{}", "RecursionError"),
])
def test_stored_arguments_that_cannot_be_decoded_give_a_reason_not_an_exception(
    args_json: object, kwargs_json: object, problem: str
) -> None:
    args, kwargs, error = decode_stored_arguments(args_json, kwargs_json)
    assert (args, kwargs) == ((), {})
    assert error is not None and error.startswith("CorruptArguments: ") and problem in error


def test_sound_stored_arguments_decode_with_no_reason() -> None:
    assert decode_stored_arguments('[1, "a"]', '{"k": [2]}') == ((1, "a"), {"k": [2]}, None)
    assert decode_stored_arguments("[]", "{}") == ((), {}, None)
