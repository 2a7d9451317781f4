"""The pure parts of progress reports and failed attempts: the pacing rule, the checks,
the stored JSON and the bound on kept errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rota.core.progress import (
    MAX_KEPT_ERRORS,
    AttemptError,
    Progress,
    ProgressPacer,
    attempt_error_json,
    check_progress,
    errors_from_json,
    kept_errors,
    progress_from_json,
    progress_json,
    progress_text,
    worker_of_owner,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float, done: float = 1) -> Progress:
    return Progress(done, 10, "", T0 + timedelta(seconds=seconds))


def test_the_pacer_writes_the_first_then_one_a_second_and_keeps_the_last() -> None:
    pacer = ProgressPacer()
    assert pacer.report(at(0)) == at(0)            # the first: at once
    assert pacer.report(at(0.5, 2)) is None        # within the second: held back
    assert pacer.report(at(0.9, 3)) is None        # replaces the one held back
    assert pacer.pending == at(0.9, 3)
    assert pacer.report(at(1.0, 4)) == at(1.0, 4)  # a second after the last write
    assert pacer.take_pending() is None            # nothing held back now
    assert pacer.report(at(1.2, 5)) is None
    assert pacer.take_pending() == at(1.2, 5)      # the last: the drive flushes it
    assert pacer.take_pending() is None


def test_a_clock_that_went_back_does_not_stall_the_writes() -> None:
    pacer = ProgressPacer()
    assert pacer.report(at(10)) is not None
    assert pacer.report(at(5)) is not None


@pytest.mark.parametrize(("done", "total", "message", "error"), [
    ("1", None, "", TypeError), (True, None, "", TypeError), (1, False, "", TypeError),
    (-0.5, None, "", ValueError), (float("nan"), None, "", ValueError),
    (3, 2, "", ValueError), (1, 2, b"x", TypeError), (1, 2, "é" * 501, ValueError),
])
def test_check_progress_refuses_bad_input(done: object, total: object, message: object,
                                          error: type[Exception]) -> None:
    with pytest.raises(error, match="set_progress"):
        check_progress(done, total, message)


def test_check_progress_takes_numbers_and_a_total_of_zero() -> None:
    assert check_progress(0, 0, "") == (0, 0, "")
    assert check_progress(2.5, None, "é" * 500) == (2.5, None, "é" * 500)
    assert Progress(0, 0, "", T0).fraction == 1.0
    assert Progress(5, None, "", T0).fraction is None


def test_progress_and_errors_round_trip_through_their_json() -> None:
    progress = Progress(2.5, 10, "rows: é", T0)
    assert progress_from_json(progress_json(progress)) == progress
    assert progress_from_json(None) is None
    error = AttemptError(3, T0, "ValueError: x", None, "h:1:t")
    assert errors_from_json(f"[{attempt_error_json(error)}]") == (error,)
    assert errors_from_json(None) == ()
    assert progress_text(progress) == "2.5/10 (25%) rows: é"
    assert progress_text(Progress(7, None, "", T0)) == "7"


def test_kept_errors_drop_the_oldest_beyond_the_bound() -> None:
    errors: tuple[AttemptError, ...] = ()
    for attempt in range(1, 26):
        errors = kept_errors(errors, AttemptError(attempt, T0, "e", None, None))
    assert [e.attempt for e in errors] == list(range(26 - MAX_KEPT_ERRORS, 26))


def test_the_worker_of_an_owner_is_its_part_after_the_at() -> None:
    assert worker_of_owner("fast@host:12:abcd0123") == "host:12:abcd0123"
    assert worker_of_owner("w1") == "w1"
