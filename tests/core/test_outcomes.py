"""Error text and tracebacks recorded with an outcome (something every store can save),
and how an outcome reads in the log."""

from __future__ import annotations

from datetime import UTC, datetime

from rota.core.outcomes import (
    MAX_ERROR_LENGTH,
    MAX_TRACEBACK_BYTES,
    Cancelled,
    DeadLettered,
    Expired,
    Quarantined,
    RetryAt,
    Snoozed,
    Succeeded,
    after_failure,
    bound_traceback,
    describe,
    describe_error,
)
from rota.core.retry import RetryPolicy

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_error_text_with_nul_or_a_lone_surrogate_is_escaped() -> None:
    # PostgreSQL refuses NUL in text; no store can encode a lone surrogate as UTF-8
    text = describe_error(ValueError("a\x00b \udc80 [bold]é\n"))
    assert text == "ValueError: a\\x00b \\udc80 [bold]é\n"
    text.encode("utf-8")


def test_error_text_is_trimmed_and_plain_text_kept_as_it_is() -> None:
    assert describe_error(KeyError()) == "KeyError"
    assert describe_error(RuntimeError("日本 [x]")) == "RuntimeError: 日本 [x]"
    assert len(describe_error(RuntimeError("x" * 5000))) == MAX_ERROR_LENGTH


# -- tracebacks ---------------------------------------------------------------------------


def test_a_short_traceback_is_kept_as_it_is() -> None:
    text = 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: é\n'
    assert bound_traceback(text) == text


def test_a_traceback_at_the_bound_is_kept_whole() -> None:
    text = "é" * (MAX_TRACEBACK_BYTES // 2)  # two bytes each: exactly the bound
    assert bound_traceback(text) == text


def test_a_long_traceback_keeps_its_end_after_a_marker_of_the_cut() -> None:
    # Given a traceback of 40,000 lines, its last line naming the exception
    lines = [f'  File "app.py", line {n}, in handler\n' for n in range(40_000)]
    text = "Traceback (most recent call last):\n" + "".join(lines) + "KeyError: 'gone'\n"
    # When it is bounded
    kept = bound_traceback(text)
    # Then it fits in 16 KiB, ends as the original ends, from a whole line, and says how
    # much of the start went
    assert len(kept.encode()) <= MAX_TRACEBACK_BYTES
    assert len(kept.encode()) > MAX_TRACEBACK_BYTES - 200
    marker, rest = kept.split("\n", 1)
    assert text.endswith(rest) and rest.startswith('  File "app.py"')
    cut = len(text.encode()) - len(rest.encode())
    assert marker == f"[the first {cut} bytes of this traceback were cut]"


def test_a_long_traceback_of_wide_characters_is_cut_between_characters() -> None:
    # Given one long line of 3-byte characters (no line start to cut at)
    text = "ValueError: " + "日" * 20_000
    kept = bound_traceback(text)
    assert len(kept.encode()) <= MAX_TRACEBACK_BYTES
    assert kept.endswith("日" * 5000) and kept.startswith("[the first ")
    assert kept.split("\n", 1)[1].strip("日") == ""


def test_a_traceback_with_nul_or_a_lone_surrogate_is_escaped() -> None:
    text = bound_traceback("ValueError: a\x00b \udc80\n")
    assert text == "ValueError: a\\x00b \\udc80\n"
    text.encode("utf-8")


# -- how an outcome reads in the log ----------------------------------------------------


def test_an_error_the_policy_does_not_retry_gives_its_one_reason() -> None:
    # Given attempt 1 of 2 failing with an error outside retry_on
    policy = RetryPolicy(max_attempts=2, retry_on=ConnectionError)
    outcome = after_failure(1, "ValueError: bad", policy, T0, exception=ValueError("bad"))
    # Then the outcome says it was not retried, and not that no attempts were left
    assert isinstance(outcome, DeadLettered)
    assert describe(outcome) == ("ValueError: bad (ValueError is not in the RetryPolicy's "
                                 "retry_on: not retried); dead-lettered")


def test_the_last_attempt_running_out_says_so() -> None:
    policy = RetryPolicy(max_attempts=2)
    outcome = after_failure(2, "ValueError: bad", policy, T0, exception=ValueError("bad"),
                            traceback="Traceback ...")
    assert outcome == DeadLettered("ValueError: bad", "Traceback ...")
    assert describe(outcome) == "ValueError: bad; dead-lettered (no attempts left)"


def test_a_failure_outcome_carries_its_traceback() -> None:
    retried = after_failure(1, "E: x", RetryPolicy(), T0, traceback="Traceback ...")
    assert isinstance(retried, RetryAt) and retried.traceback == "Traceback ..."
    given_up = after_failure(1, "E: x", RetryPolicy(give_up_on=ValueError), T0,
                             exception=ValueError("x"), traceback="Traceback ...")
    assert isinstance(given_up, DeadLettered) and given_up.traceback == "Traceback ..."


# -- what each outcome asks of a store (one mapping, rota.core.outcomes.ending) ----------


def test_every_outcome_kind_has_its_own_ending() -> None:
    from typing import get_args

    from rota.core.jobs import JobEvent
    from rota.core.outcomes import Outcome, ending

    samples = {
        "Succeeded": Succeeded('{"n": 1}'),
        "RetryAt": RetryAt(T0, "E: x", "tb"),
        "DeadLettered": DeadLettered("E: y", "tb2"),
        "Quarantined": Quarantined("E: z"),
        "Cancelled": Cancelled(),
        "Snoozed": Snoozed(T0, "not yet"),
        "Expired": Expired("Expired: not started by 2026-01-01 12:00:00 UTC"),
    }
    # Every member of the Outcome union is covered here (a new one fails this test too)
    assert {kind.__name__ for kind in get_args(Outcome)} == set(samples)
    endings = {name: ending(outcome) for name, outcome in samples.items()}
    assert endings == {
        "Succeeded": (JobEvent.COMPLETE, None, None, None, '{"n": 1}'),
        "RetryAt": (JobEvent.RETRY, "E: x", "tb", T0, None),
        "DeadLettered": (JobEvent.DEAD_LETTER, "E: y", "tb2", None, None),
        "Quarantined": (JobEvent.QUARANTINE, "E: z", None, None, None),
        "Cancelled": (JobEvent.CANCEL, Cancelled().error, None, None, None),
        # A snooze writes no error: only its due time (the store counts the snooze)
        "Snoozed": (JobEvent.SNOOZE, None, None, T0, None),
        # An expiry is written by the claim itself; its ending only names it
        "Expired": (JobEvent.EXPIRE, "Expired: not started by 2026-01-01 12:00:00 UTC",
                    None, None, None),
    }


def test_something_that_is_no_outcome_is_refused_not_quarantined() -> None:
    import pytest

    from rota.core.outcomes import ending

    class Postponed:  # a kind of outcome added later, not taught to `ending`
        error = "Postponed: later"

    with pytest.raises(AssertionError):
        ending(Postponed())  # type: ignore[arg-type]
