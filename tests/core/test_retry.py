"""RetryPolicy: defaults, custom backoff, and the dead-letter decision (DESIGN.md)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

import rota
from rota.core.retry import DeadLetter, Retry, RetryPolicy


def test_defaults_are_ten_attempts_and_exponential_backoff() -> None:
    policy = rota.RetryPolicy()
    assert policy.max_attempts == 10
    delays = [policy.decide(attempt) for attempt in range(1, 10)]
    assert delays == [
        Retry(timedelta(seconds=s)) for s in (2, 4, 8, 16, 32, 64, 128, 256, 300)]


@pytest.mark.parametrize("attempt", [9, 10, 11, 50, 10_000])
def test_default_backoff_is_capped_at_five_minutes(attempt: int) -> None:
    assert RetryPolicy(max_attempts=10**6).decide(attempt) == Retry(timedelta(minutes=5))


def test_after_max_attempts_the_decision_is_dead_letter() -> None:
    policy = RetryPolicy(max_attempts=3)
    assert isinstance(policy.decide(1), Retry)
    assert isinstance(policy.decide(2), Retry)
    assert policy.decide(3) == DeadLetter()
    assert policy.decide(4) == DeadLetter()


def test_one_attempt_means_no_retry() -> None:
    assert RetryPolicy(max_attempts=1).decide(1) == DeadLetter()


@pytest.mark.parametrize(
    ("backoff", "expected"),
    [
        (lambda attempt: timedelta(seconds=attempt * 10), timedelta(seconds=30)),
        (lambda attempt: attempt * 10, timedelta(seconds=30)),
        (lambda attempt: 0.5, timedelta(milliseconds=500)),
        (lambda attempt: 0, timedelta(0)),
    ],
    ids=["timedelta", "int-seconds", "float-seconds", "zero"],
)
def test_custom_backoff_returns_timedelta_or_seconds(
    backoff: object, expected: timedelta
) -> None:
    policy = RetryPolicy(max_attempts=5, backoff=backoff)  # type: ignore[arg-type]
    assert policy.decide(3) == Retry(expected)


def test_backoff_receives_the_one_based_failed_attempt() -> None:
    seen: list[int] = []

    def backoff(attempt: int) -> float:
        seen.append(attempt)
        return 1.0

    policy = RetryPolicy(max_attempts=4, backoff=backoff)
    for attempt in range(1, 5):
        policy.decide(attempt)
    assert seen == [1, 2, 3]  # the 4th failure dead-letters without asking


@pytest.mark.parametrize(
    "backoff", [lambda attempt: -1, lambda attempt: "soon", lambda attempt: 1 / 0]
)
def test_a_broken_backoff_falls_back_to_the_default_and_says_why(
    backoff: Callable[[int], object],
) -> None:
    # A bad delay must not strand the job: the default schedule is used, the reason kept
    decision = RetryPolicy(backoff=backoff).decide(3)  # type: ignore[arg-type]
    assert isinstance(decision, Retry)
    assert decision.delay == timedelta(seconds=8)
    assert decision.backoff_error is not None


@pytest.mark.parametrize("bad", [0, -3])
def test_max_attempts_below_one_is_a_value_error(bad: int) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=bad)


@pytest.mark.parametrize("bad", [2.0, "3", True])
def test_max_attempts_must_be_an_int(bad: object) -> None:
    with pytest.raises(TypeError):
        RetryPolicy(max_attempts=bad)  # type: ignore[arg-type]


def test_backoff_must_be_callable() -> None:
    with pytest.raises(TypeError):
        RetryPolicy(backoff=5)  # type: ignore[arg-type]


def test_retry_policies_are_values() -> None:
    assert RetryPolicy() == RetryPolicy()
    assert hash(RetryPolicy(3)) == hash(RetryPolicy(3))
    assert RetryPolicy(3) != RetryPolicy(4)
