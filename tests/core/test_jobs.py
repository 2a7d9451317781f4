"""Jobs: the state transition table, and argument encoding that names a bad argument."""

from __future__ import annotations

import dataclasses
import itertools
import json
from datetime import UTC, datetime, timedelta

import pytest

from rota import JobState
from rota.core.jobs import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    MAX_ARGUMENT_DEPTH,
    REQUEUEABLE_STATES,
    TRANSITIONS,
    InvalidTransition,
    JobEvent,
    JobRecord,
    Lease,
    NewJob,
    PayloadTooLarge,
    check_new_jobs,
    check_requeueable,
    decode_arguments,
    decode_result,
    decode_stored_arguments,
    encode_arguments,
    encode_result,
    new_record,
    transition,
    validate_job_name,
)
from rota.core.progress import AttemptError, Progress

S, E = JobState, JobEvent
LEGAL = {
    (S.WAITING, E.PARENTS_DONE): S.SCHEDULED,  # its parents let it run (workflows)
    (S.WAITING, E.CANCEL): S.CANCELLED,  # cancelled, or a parent it needed failed
    (S.SCHEDULED, E.CLAIM): S.LEASED,
    (S.SCHEDULED, E.CANCEL): S.CANCELLED,
    (S.SCHEDULED, E.EXPIRE): S.CANCELLED,  # due after its expires_at: ended by the claim
    (S.LEASED, E.COMPLETE): S.SUCCEEDED,
    (S.LEASED, E.RETRY): S.SCHEDULED,
    (S.LEASED, E.RELEASE): S.SCHEDULED,
    (S.LEASED, E.SNOOZE): S.SCHEDULED,  # rota.Snooze: the attempt does not count
    (S.LEASED, E.DEAD_LETTER): S.DEAD_LETTERED,
    (S.LEASED, E.QUARANTINE): S.QUARANTINED,
    (S.LEASED, E.CANCEL): S.CANCELLED,  # a cancel request acted on
    (S.DEAD_LETTERED, E.REQUEUE): S.SCHEDULED,
    (S.QUARANTINED, E.REQUEUE): S.SCHEDULED,
    (S.CANCELLED, E.REQUEUE): S.SCHEDULED,
}


def test_job_state_values_are_the_public_names() -> None:
    assert {state.value for state in JobState} == {
        "waiting", "scheduled", "leased", "succeeded", "dead_lettered", "quarantined",
        "cancelled"}


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


def test_finished_states_have_no_way_out_but_requeue() -> None:
    for state in JobState:
        if state.finished:
            assert not any((state, event) in LEGAL for event in JobEvent
                           if event is not E.REQUEUE)
    assert {S.DEAD_LETTERED, S.QUARANTINED, S.CANCELLED} == REQUEUEABLE_STATES
    assert not JobState.SCHEDULED.finished and not JobState.LEASED.finished
    assert not JobState.WAITING.finished


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


# -- payload limit and results -------------------------------------------------------------


def test_the_default_payload_limit_is_one_mebibyte() -> None:
    assert DEFAULT_MAX_PAYLOAD_BYTES == 1024 * 1024


def test_arguments_over_the_limit_are_refused_naming_size_limit_and_setting() -> None:
    # Given arguments of 100 bytes of JSON ('["' + 96 x + '"]' and '{}' = 100 + 2)
    args = ["x" * 96]
    assert encode_arguments(args, {}, max_bytes=102) == ('["' + "x" * 96 + '"]', "{}")
    with pytest.raises(PayloadTooLarge) as refused:
        encode_arguments(args, {}, max_bytes=101)
    message = str(refused.value)
    assert "102 bytes" in message and "101 bytes" in message
    assert "max_payload_bytes" in message
    assert isinstance(refused.value, ValueError)


def test_the_limit_counts_utf8_bytes_not_characters() -> None:
    # "é" is one character and two bytes: 50 of them are 100 bytes + '[""]{}' = 106
    encode_arguments(["é" * 50], {}, max_bytes=106)
    with pytest.raises(PayloadTooLarge, match="106 bytes"):
        encode_arguments(["é" * 50], {}, max_bytes=105)


def test_keyword_arguments_count_towards_the_limit() -> None:
    with pytest.raises(PayloadTooLarge):
        encode_arguments([], {"body": "y" * 200}, max_bytes=100)


def test_results_round_trip_as_json() -> None:
    for value in ({"sent": 3, "to": ["a", "é"]}, [1, 2.5, None, True], "ok", 0, False):
        text = encode_result(value)
        assert text is not None and decode_result(text) == value
    assert encode_result(None) is None and decode_result(None) is None


@pytest.mark.parametrize("value", [object(), {1: "int key"}, {"s": {1, 2}}, b"bytes"])
def test_a_result_that_is_not_json_is_a_type_error_naming_its_type(value: object) -> None:
    with pytest.raises(TypeError, match=f"returned a {type(value).__name__}"):
        encode_result(value)


def test_a_result_over_the_limit_is_refused() -> None:
    with pytest.raises(PayloadTooLarge, match="result as JSON: 12 bytes"):
        encode_result("x" * 10, max_bytes=11)


def test_only_failed_and_cancelled_states_can_be_requeued() -> None:
    assert check_requeueable(S.CANCELLED) is S.CANCELLED
    with pytest.raises(ValueError, match="cancelled, dead_lettered, quarantined"):
        check_requeueable(S.SUCCEEDED)
def nested(levels: int) -> list[object]:
    value: list[object] = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize("levels", [101, 1_000, 100_000])
def test_arguments_nested_too_deep_are_a_type_error_naming_them(levels: int) -> None:
    # Given an argument nested deeper than the limit (1,000 raised RecursionError before)
    with pytest.raises(TypeError, match=r"keyword argument 'tree' is nested more than 100"):
        encode_arguments(("fine",), {"tree": nested(levels)})
    with pytest.raises(TypeError, match=r"positional argument 1 is nested more than 100"):
        encode_arguments(("fine", {"k": nested(levels)}), {})


def test_arguments_nested_up_to_the_limit_round_trip() -> None:
    args_json, kwargs_json = encode_arguments((nested(MAX_ARGUMENT_DEPTH),), {})
    assert decode_arguments(args_json, kwargs_json) == ((nested(MAX_ARGUMENT_DEPTH),), {})


def test_a_cycle_is_a_type_error_not_a_hang() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(TypeError, match="positional argument 0 is not JSON-serialisable"):
        encode_arguments((loop,), {})


@pytest.mark.parametrize(
    ("args", "kwargs", "named"),
    [
        (("a\x00b",), {}, "positional argument 0 holds a NUL"),
        (("ok", ["x", {"k": "\x00"}]), {}, "positional argument 1 holds a NUL"),
        ((), {"d": {"key\x00": 1}}, "keyword argument 'd' holds a NUL"),
        ((), {"k\x00": 1}, "keyword argument name 'k\\\\x00' holds a NUL"),
    ],
)
def test_a_nul_character_in_an_argument_is_refused_naming_it(
    args: tuple[object, ...], kwargs: dict[str, object], named: str
) -> None:
    # PostgreSQL cannot keep NUL in text: refused on every store, before storing
    with pytest.raises(TypeError, match=named):
        encode_arguments(args, kwargs)


def test_the_text_backslash_u0000_is_not_a_nul() -> None:
    args_json, kwargs_json = encode_arguments(("\\u0000",), {"k": "\\u0000"})
    assert decode_arguments(args_json, kwargs_json) == (("\\u0000",), {"k": "\\u0000"})


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "non-empty"),
        ("a" * 201, "at most 200 characters; got 201"),
        ("a" * 10_000, "at most 200 characters; got 10000"),
        ("send\x00email", "control characters"),
        ("two\nlines", "control characters"),
        ("lone\ud800", "control characters"),
    ],
)
def test_job_names_follow_one_rule(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_job_name(name)


def test_job_names_may_hold_spaces_and_any_printable_text() -> None:
    for name in ("send email", "a" * 200, "tasks.<locals>.f", "[bold]x[/]", "日本"):
        assert validate_job_name(name) == name
    with pytest.raises(TypeError, match="must be a str"):
        validate_job_name(42)


def test_check_new_jobs_refuses_what_some_store_could_not_save() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    good = NewJob("ok", "q", now)
    check_new_jobs([good, good])
    for bad, error in [
        (NewJob("a\x00", "q", now), ValueError),
        (NewJob("ok", "q\x00", now), ValueError),
        (NewJob("x" * 201, "q", now), ValueError),
        (NewJob("ok", "q", now, '["\\u0000"]'), TypeError),
        (NewJob("ok", "q", now, "[]", '{"k": {"\\u0000": 1}}'), TypeError),
    ]:
        with pytest.raises(error):
            check_new_jobs([good, bad])
    check_new_jobs([NewJob("ok", "q", now, '["\\\\u0000"]')])  # the text \u0000 is fine
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


def test_new_record_is_an_ordinary_frozen_job_record() -> None:
    """The stores' hot-path constructor (an unfrozen twin whose class is switched) builds
    what JobRecord(...) builds, field for field, and the result is as frozen."""
    at = datetime(2026, 1, 2, tzinfo=UTC)
    values = (7, "email", "mail", JobState.LEASED, 2, at, (1, "a"), {"k": [1]}, "boom", at,
              None, "owner", at, at, {"r": 1}, True, None, "key", '{"tp": "x"}',
              "Traceback (most recent call last): ...", (3, 5), {"tenant": "acme"}, 4, at,
              Progress(1, 2, "half", at), (AttemptError(1, at, "e", None, "h:1:t"),), "h:1:t",
              "finished")
    built = new_record(*values)
    assert type(built) is JobRecord
    assert built == JobRecord(*values)
    assert repr(built) == repr(JobRecord(*values))
    assert [getattr(built, f.name) for f in dataclasses.fields(JobRecord)] == list(values)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.attempt = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        new_record(*values[:-1])  # every field, positionally: no defaults
    lease = built.lease
    assert type(lease) is Lease and lease == Lease(7, "owner", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        lease.owner = "other"  # type: ignore[misc]


def test_the_last_attempt_duration_runs_from_its_claim_to_its_finish() -> None:
    at = datetime(2026, 1, 2, tzinfo=UTC)
    done = JobRecord(1, "j", "q", JobState.SUCCEEDED, 1, at, started_at=at,
                     finished_at=at + timedelta(seconds=2.5))
    assert done.last_attempt_duration == timedelta(seconds=2.5)
    # Not known: still running, retried (no end recorded), never started
    assert dataclasses.replace(done, state=JobState.LEASED,
                               finished_at=None).last_attempt_duration is None
    assert dataclasses.replace(done, state=JobState.SCHEDULED,
                               finished_at=None).last_attempt_duration is None
    assert dataclasses.replace(done, state=JobState.DEAD_LETTERED,
                               started_at=None).last_attempt_duration is None
    # A job cancelled while it waited ended no attempt; one cancelled while running did
    waiting = dataclasses.replace(done, state=JobState.CANCELLED)
    assert waiting.last_attempt_duration is None
    running = dataclasses.replace(waiting, cancel_requested=True)
    assert running.last_attempt_duration == timedelta(seconds=2.5)


# -- expiry --------------------------------------------------------------------------------


def test_an_attempt_at_the_expiry_still_starts_and_one_after_it_does_not() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    from rota.core.jobs import expired_error, is_expired

    expires = datetime(2026, 1, 1, 12, 0, 0, 999_999, tzinfo=UTC)
    assert not is_expired(None, expires)
    assert not is_expired(expires, expires)
    assert is_expired(expires, expires + timedelta(microseconds=1))
    # The error names the expiry in UTC to the second, rounded down, whatever its zone
    east = expires.astimezone(timezone(timedelta(hours=2)))
    assert expired_error(east) == "Expired: not started by 2026-01-01 12:00:00 UTC"
