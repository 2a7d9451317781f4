"""Retry decisions: what happens to a job after a failed attempt.

Owns `RetryPolicy` and the `RetryDecision` values it returns. A decision is a value; the
worker performs it. Pure: no clock (the caller adds the delay to its own "now").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from rota.core.durations import Duration, to_timedelta

DEFAULT_MAX_ATTEMPTS = 10
BACKOFF_BASE = timedelta(seconds=2)
BACKOFF_CAP = timedelta(minutes=5)


def exponential_backoff(attempt: int) -> timedelta:
    """2 s after the first failed attempt, doubling each time, capped at 5 minutes."""
    if attempt >= 10:  # 2 * 2**9 s already exceeds the cap; avoid huge integers
        return BACKOFF_CAP
    delay: timedelta = BACKOFF_BASE * (2 ** (attempt - 1))
    return min(delay, BACKOFF_CAP)


@dataclass(frozen=True, slots=True)
class Retry:
    """Run the job again after `delay`. `backoff_error` says why the default backoff was
    used instead of the policy's own (its backoff raised or returned a bad value)."""

    delay: timedelta
    backoff_error: str | None = None


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Give up: the job has used all its attempts."""


RetryDecision = Retry | DeadLetter


class RetryPolicy:
    """How often a failing job is tried, and how long to wait between attempts.

    Args:
        max_attempts: attempts in all (the first run included) before the job is
            dead-lettered; at least 1. Default 10.
        backoff: `backoff(attempt) -> timedelta | seconds`, the delay after failed attempt
            `attempt` (1-based). Default: 2 s, doubling, capped at 5 minutes.

    Raises:
        ValueError: if `max_attempts` < 1.
    """

    __slots__ = ("backoff", "max_attempts")

    def __init__(
        self,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff: Callable[[int], Duration] | None = None,
    ) -> None:
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int):
            raise TypeError(f"max_attempts must be an int; got {max_attempts!r}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1; got {max_attempts}")
        if backoff is not None and not callable(backoff):
            raise TypeError(f"backoff must be callable as backoff(attempt); got {backoff!r}")
        self.max_attempts = max_attempts
        self.backoff: Callable[[int], Duration] = backoff or exponential_backoff

    def decide(self, attempt: int) -> RetryDecision:
        """The decision after attempt number `attempt` (1-based) failed."""
        if attempt >= self.max_attempts:
            return DeadLetter()
        try:
            return Retry(to_timedelta(self.backoff(attempt), "backoff(attempt)", allow_zero=True))
        except Exception as error:
            # A broken backoff must not strand the job: retry on the default schedule and
            # say so (the worker records it in last_error and logs it).
            return Retry(exponential_backoff(attempt), f"{type(error).__name__}: {error}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RetryPolicy):
            return NotImplemented
        return (self.max_attempts, self.backoff) == (other.max_attempts, other.backoff)

    def __hash__(self) -> int:
        return hash((self.max_attempts, self.backoff))

    def __repr__(self) -> str:
        return f"RetryPolicy(max_attempts={self.max_attempts}, backoff={self.backoff!r})"
