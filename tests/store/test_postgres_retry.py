"""rota.store.postgres.retry without a server: which errors are retried, the growing
waits between tries, the bound, and the calling thread's store-call deadline."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("psycopg")

import psycopg

from rota.store.base import StoreError
from rota.store.deadlines import call_deadline
from rota.store.postgres.retry import TRIES, retried


def failing(errors: list[BaseException]) -> tuple[list[int], Callable[[], int]]:
    """A transaction that raises each of `errors` (as the store does: a StoreError caused
    by the psycopg error) on its first calls, then returns its call count."""
    calls: list[int] = []

    def run() -> int:
        calls.append(len(calls) + 1)
        if len(calls) <= len(errors):
            raise StoreError("PostgreSQL store 'x' failed to cancel") from errors[len(calls) - 1]
        return len(calls)

    return calls, run


def test_deadlocks_and_serialisation_failures_are_tried_again_after_growing_waits() -> None:
    # Given a transaction that deadlocks, fails to serialise, deadlocks, then succeeds
    calls, run = failing([psycopg.errors.DeadlockDetected("deadlock detected"),
                          psycopg.errors.SerializationFailure("could not serialize"),
                          psycopg.errors.DeadlockDetected("deadlock detected")])
    waits: list[float] = []
    # When it is run through the retry
    result = retried(run, first_wait_s=0.01, sleep=waits.append)
    # Then it ran four times, with three waits, each up to twice the one before
    assert result == 4 and calls == [1, 2, 3, 4]
    assert len(waits) == 3
    for number, wait in enumerate(waits):
        assert 0.01 * 2**number / 2 <= wait <= 0.01 * 2**number


def test_other_errors_are_not_retried() -> None:
    # Given a transaction that fails with a unique violation
    calls, run = failing([psycopg.errors.UniqueViolation("duplicate key")])
    waits: list[float] = []
    # When it is run through the retry, Then its error comes back at once
    with pytest.raises(StoreError) as raised:
        retried(run, sleep=waits.append)
    assert calls == [1] and waits == []
    assert isinstance(raised.value.__cause__, psycopg.errors.UniqueViolation)


def test_after_the_last_try_the_error_names_the_failure_and_the_tries() -> None:
    # Given a transaction that always fails to serialise
    calls, run = failing([psycopg.errors.SerializationFailure("could not serialize")] * 99)
    waits: list[float] = []
    # When it is run through the retry
    with pytest.raises(StoreError) as raised:
        retried(run, sleep=waits.append)
    # Then it was tried TRIES times, and the error says what failed and how often
    assert len(calls) == TRIES and len(waits) == TRIES - 1
    message = str(raised.value)
    assert "a serialisation failure, SQLSTATE 40001" in message
    assert f"in each of {TRIES} tries" in message
    assert isinstance(raised.value.__cause__, psycopg.errors.SerializationFailure)


def test_no_retry_waits_past_the_calls_deadline() -> None:
    # Given a transaction that deadlocks every time, called with a deadline shorter than
    # the first wait
    calls, run = failing([psycopg.errors.DeadlockDetected("deadlock detected")] * 99)
    waits: list[float] = []
    # When it is run through the retry
    with call_deadline(5.0), pytest.raises(StoreError) as raised:
        retried(run, first_wait_s=60.0, sleep=waits.append)
    # Then it was tried once and not waited for, the error saying why
    assert calls == [1] and waits == []
    assert "in each of 1 tries, and the call's deadline comes before another" in str(
        raised.value)
