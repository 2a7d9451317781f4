"""RetryPolicy: defaults, custom backoff, and the dead-letter decision."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

import rota
from rota.core.retry import DeadLetter, RetryLater, RetryPolicy


def test_defaults_are_ten_attempts_and_exponential_backoff() -> None:
    policy = rota.RetryPolicy()
    assert policy.max_attempts == 10
    delays = [policy.decide(attempt) for attempt in range(1, 10)]
    assert delays == [
        RetryLater(timedelta(seconds=s)) for s in (2, 4, 8, 16, 32, 64, 128, 256, 300)]


@pytest.mark.parametrize("attempt", [9, 10, 11, 50, 10_000])
def test_default_backoff_is_capped_at_five_minutes(attempt: int) -> None:
    assert RetryPolicy(max_attempts=10**6).decide(attempt) == RetryLater(timedelta(minutes=5))


def test_after_max_attempts_the_decision_is_dead_letter() -> None:
    policy = RetryPolicy(max_attempts=3)
    assert isinstance(policy.decide(1), RetryLater)
    assert isinstance(policy.decide(2), RetryLater)
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
    assert policy.decide(3) == RetryLater(expected)


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
    assert isinstance(decision, RetryLater)
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


# -- retries that fit the failure ---------------------------------------


class Transient(ConnectionError):
    pass


def test_retry_on_retries_only_the_listed_errors() -> None:
    # Given a policy that retries connection errors and timeouts only
    policy = RetryPolicy(max_attempts=5, retry_on=(ConnectionError, TimeoutError))
    # Then those (and their subclasses) are retried on the backoff
    assert policy.decide(1, Transient("reset")) == RetryLater(timedelta(seconds=2))
    assert policy.decide(2, TimeoutError()) == RetryLater(timedelta(seconds=4))
    # And anything else gives up at once, saying why
    assert policy.decide(1, KeyError("x")) == DeadLetter(
        "KeyError is not in the RetryPolicy's retry_on: not retried")


def test_give_up_on_dead_letters_at_once_and_wins_over_retry_on() -> None:
    policy = RetryPolicy(retry_on=Exception, give_up_on=(ValueError, PermissionError))
    assert policy.decide(1, ValueError("bad input")) == DeadLetter(
        "ValueError is in the RetryPolicy's give_up_on: not retried")
    assert policy.decide(1, PermissionError()) == DeadLetter(
        "PermissionError is in the RetryPolicy's give_up_on: not retried")
    assert policy.decide(1, RuntimeError()) == RetryLater(timedelta(seconds=2))


def test_without_an_error_only_max_attempts_applies() -> None:
    # An expired lease has no exception: retry_on cannot refuse it
    policy = RetryPolicy(max_attempts=2, retry_on=ConnectionError)
    assert policy.decide(1) == RetryLater(timedelta(seconds=2))
    assert policy.decide(2) == DeadLetter()


def test_a_retry_request_uses_its_delay_and_counts_as_an_attempt() -> None:
    policy = RetryPolicy(max_attempts=3, retry_on=ConnectionError, jitter=1.0)
    # rota.Retry is not subject to retry_on/give_up_on, nor to jitter
    assert policy.decide(1, rota.Retry(30)) == RetryLater(timedelta(seconds=30))
    assert policy.decide(2, rota.Retry(timedelta(minutes=2))) == RetryLater(
        timedelta(minutes=2))
    # But max_attempts still bounds it
    assert policy.decide(3, rota.Retry(30)) == DeadLetter()


def test_a_retry_request_without_a_delay_uses_the_backoff() -> None:
    policy = RetryPolicy(backoff=lambda attempt: attempt * 7)
    assert policy.decide(2, rota.Retry()) == RetryLater(timedelta(seconds=14))


def test_retry_describes_itself() -> None:
    assert str(rota.Retry(30, "rate limited")) == "retry requested in 30 s: rate limited"
    assert str(rota.Retry()) == "retry requested on the RetryPolicy's backoff"
    with pytest.raises(ValueError):
        rota.Retry(-1)
    with pytest.raises(TypeError):
        rota.Retry("soon")  # type: ignore[arg-type]


def test_jitter_is_off_by_default_so_delays_are_exact() -> None:
    assert RetryPolicy().jitter == 0.0
    assert {RetryPolicy().decide(3, job_id=n) for n in range(50)} == {
        RetryLater(timedelta(seconds=8))}


def test_jitter_shortens_delays_deterministically_within_its_fraction() -> None:
    # Given a policy with 50 % jitter
    policy = RetryPolicy(jitter=0.5)
    delays = [policy.decide(3, job_id=n) for n in range(200)]
    seconds = [d.delay.total_seconds() for d in delays if isinstance(d, RetryLater)]
    # Then every delay lies in [4 s, 8 s], they differ between jobs
    assert all(4 <= s <= 8 for s in seconds) and len(set(seconds)) > 150
    # And the same job and attempt always get the same delay (no randomness)
    assert [policy.decide(3, job_id=n) for n in range(200)] == delays
    assert RetryPolicy(jitter=0.5).decide(3, job_id=7) == policy.decide(3, job_id=7)
    # And a different attempt of the same job gets a different draw
    assert policy.decide(4, job_id=7).delay / 16 != policy.decide(3, job_id=7).delay / 8  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"retry_on": "ValueError"}, TypeError),
        ({"retry_on": ValueError("x")}, TypeError),
        ({"give_up_on": (ValueError, int)}, TypeError),
        ({"retry_on": ()}, ValueError),
        ({"jitter": 1.5}, ValueError),
        ({"jitter": -0.1}, ValueError),
        ({"jitter": "0.1"}, ValueError),
    ],
)
def test_bad_retry_options_are_refused(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_policies_with_the_same_options_are_equal() -> None:
    assert RetryPolicy(retry_on=[OSError], jitter=True) == RetryPolicy(
        retry_on=(OSError,), jitter=1.0)
    assert RetryPolicy(retry_on=OSError) != RetryPolicy()
    assert "retry_on=(<class 'OSError'>,)" in repr(RetryPolicy(retry_on=OSError))
