"""Retry decisions: what happens to a job after a failed attempt.

Owns `RetryPolicy`, the `rota.Retry` exception a handler raises to ask for a retry, and
the `RetryDecision` values a policy returns. A decision is a value; the worker performs
it. Pure: no clock (the caller adds the delay to its own "now"), no randomness: jitter is
derived from a hash of the job id and the attempt, so the same job and attempt always get
the same delay (virtual-time tests stay exact, even with jitter on).

Rules, in order, for an attempt that raised `error`:
1. `rota.Retry(delay)`: retried after `delay` (the policy's backoff when None), without
   jitter. It counts as an attempt (as Celery's `self.retry()` and Dramatiq's `Retry` do),
   so `max_attempts` still bounds it; `retry_on` and `give_up_on` do not apply.
2. An error matching `give_up_on`, or (when `retry_on` is given) not matching `retry_on`,
   is dead-lettered at once, whatever attempts are left.
3. Otherwise: dead-lettered once `attempt >= max_attempts`, else retried after
   `backoff(attempt)`, shortened by the jitter if any.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from rota.core.durations import Duration, to_timedelta

DEFAULT_MAX_ATTEMPTS = 10
BACKOFF_BASE = timedelta(seconds=2)
BACKOFF_CAP = timedelta(minutes=5)

ExceptionTypes = type[BaseException] | tuple[type[BaseException], ...]


def exponential_backoff(attempt: int) -> timedelta:
    """2 s after the first failed attempt, doubling each time, capped at 5 minutes."""
    if attempt >= 10:  # 2 * 2**9 s already exceeds the cap; avoid huge integers
        return BACKOFF_CAP
    delay: timedelta = BACKOFF_BASE * (2 ** (attempt - 1))
    return min(delay, BACKOFF_CAP)


class Retry(Exception):
    """Raise it in a handler to have the job run again after `delay`.

    The attempt counts like a failed one (the job's `attempt` goes up and `max_attempts`
    still applies: once it is reached the job is dead-lettered), but the worker logs it
    at INFO without a traceback, and `retry_on`/`give_up_on` do not apply. No jitter is
    added to an explicit delay.

    Args:
        delay: a timedelta or seconds (0 allowed); None: the RetryPolicy's backoff.
        reason: a few words for `last_error` and the log, e.g. "rate limited".

    Raises:
        ValueError, TypeError: for a negative or non-numeric delay (raised where the
            handler constructs it, so the attempt fails with that error instead).
    """

    def __init__(self, delay: Duration | None = None, reason: str = "") -> None:
        self.delay: timedelta | None = (
            None if delay is None else to_timedelta(delay, "Retry(delay)", allow_zero=True)
        )
        self.reason = str(reason)
        when = "on the RetryPolicy's backoff" if self.delay is None else (
            f"in {self.delay.total_seconds():g} s")
        super().__init__(f"retry requested {when}" + (f": {self.reason}" if self.reason
                                                        else ""))


class Snooze(Exception):
    """Raise it in a handler to have the job run again after `delay`, without counting
    the attempt: the job goes back to `scheduled`, due at now + `delay`, its `attempt`
    back to what it was before this run (so a job that snoozes for ever never
    dead-letters) and its `JobRecord.snoozes` one higher. Its last error is left as it
    was (a snooze is no failure), and the worker logs it at INFO with `reason`.
    Oban's `{:snooze, seconds}` and River's `JobSnooze` do the same.

    Args:
        delay: a timedelta or seconds, 0 or more (0: due again at once).
        reason: a few words for the log, e.g. "waiting for the upstream export".

    Raises:
        ValueError, TypeError: for a negative, NaN, infinite, too long or non-numeric
            delay, where the handler constructs it: the attempt then fails with that
            error (and counts) instead, and nothing of the snooze is stored.
    """

    def __init__(self, delay: Duration, reason: str = "") -> None:
        self.delay: timedelta = to_timedelta(delay, "Snooze(delay)", allow_zero=True)
        self.reason = str(reason)
        super().__init__(f"snoozed for {self.delay.total_seconds():g} s"
                         + (f": {self.reason}" if self.reason else ""))


@dataclass(frozen=True, slots=True)
class RetryLater:
    """Run the job again after `delay`. `backoff_error` says why the default backoff was
    used instead of the policy's own (its backoff raised or returned a bad value)."""

    delay: timedelta
    backoff_error: str | None = None


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Give up. `reason` says why when it was not the last attempt running out (the
    error matched `give_up_on`, or did not match `retry_on`)."""

    reason: str | None = None


RetryDecision = RetryLater | DeadLetter


def _exception_types(value: object, name: str) -> tuple[type[BaseException], ...] | None:
    """`retry_on`/`give_up_on` as a tuple of exception classes (None stays None)."""
    if value is None:
        return None
    types = value if isinstance(value, tuple | list) else (value,)
    if not types:
        raise ValueError(f"{name} must name at least one exception type, or be None; got "
                         f"{value!r}")
    for item in types:
        if not (isinstance(item, type) and issubclass(item, BaseException)):
            raise TypeError(
                f"{name} takes an exception type or a tuple of them (e.g. {name}="
                f"(ConnectionError, TimeoutError)); got {item!r}"
            )
    return tuple(types)


def _jitter_fraction(value: object) -> float:
    if value is True:
        return 1.0
    if value is False or value is None:
        return 0.0
    if not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(
            f"jitter must be a fraction from 0 to 1 (or True for 1, False for none); "
            f"got {value!r}"
        )
    return float(value)


def jitter_unit(job_id: int, attempt: int) -> float:
    """A number in [0, 1) that depends only on (job id, attempt): the stand-in for a random
    draw, so that jitter spreads retries of different jobs apart while every run of the
    same scenario gives the same delays."""
    digest = hashlib.blake2b(f"rota-jitter:{job_id}:{attempt}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big") / 2**64


class RetryPolicy:
    """How often a failing job is tried, and how long to wait between attempts.

    Args:
        max_attempts: attempts in all (the first run included) before the job is
            dead-lettered; at least 1. Default 10.
        backoff: `backoff(attempt) -> timedelta | seconds`, the delay after failed attempt
            `attempt` (1-based). Default: 2 s, doubling, capped at 5 minutes.
        retry_on: an exception type or a tuple of them: only errors of these types are
            retried; any other error dead-letters the job at once. Default None: every
            error is retried.
        give_up_on: an exception type or a tuple of them that dead-letter the job at
            once, never retried (checked before `retry_on`). Default None.
        jitter: a fraction from 0 to 1 (True means 1): each backoff delay is shortened by
            up to that fraction, `delay * (1 - jitter * u)`, where `u` in [0, 1) comes
            from a hash of the job id and attempt (no random number generator: the same
            job and attempt always wait the same). Spreads the retries of jobs that failed
            together. Default 0 (off), so delays are exact.

    `rota.Retry(delay)` raised by a handler is retried after that delay, counting as an
    attempt (see `rota.Retry`).

    Raises:
        ValueError: if `max_attempts` < 1, `jitter` is outside 0..1, or `retry_on`/
            `give_up_on` is an empty tuple.
        TypeError: if `max_attempts` is not an int, `backoff` is not callable, or
            `retry_on`/`give_up_on` holds something that is not an exception type.
    """

    __slots__ = ("backoff", "give_up_on", "jitter", "max_attempts", "retry_on")

    def __init__(
        self,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff: Callable[[int], Duration] | None = None,
        retry_on: ExceptionTypes | None = None,
        give_up_on: ExceptionTypes | None = None,
        jitter: float | bool = 0.0,
    ) -> None:
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int):
            raise TypeError(f"max_attempts must be an int; got {max_attempts!r}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1; got {max_attempts}")
        if backoff is not None and not callable(backoff):
            raise TypeError(f"backoff must be callable as backoff(attempt); got {backoff!r}")
        self.max_attempts = max_attempts
        self.backoff: Callable[[int], Duration] = backoff or exponential_backoff
        self.retry_on = _exception_types(retry_on, "retry_on")
        self.give_up_on = _exception_types(give_up_on, "give_up_on")
        self.jitter = _jitter_fraction(jitter)

    def decide(
        self, attempt: int, error: BaseException | None = None, *, job_id: int = 0
    ) -> RetryDecision:
        """The decision after attempt number `attempt` (1-based) failed with `error`
        (None: no exception, e.g. an expired lease; only `max_attempts` applies then).
        `job_id` seeds the jitter."""
        if isinstance(error, Retry):
            if attempt >= self.max_attempts:
                return DeadLetter()
            if error.delay is not None:
                return RetryLater(error.delay)
            return self._backoff(attempt, job_id, jitter=False)
        if error is not None:
            kind = type(error).__name__
            if self.give_up_on is not None and isinstance(error, self.give_up_on):
                return DeadLetter(f"{kind} is in the RetryPolicy's give_up_on: not retried")
            if self.retry_on is not None and not isinstance(error, self.retry_on):
                return DeadLetter(f"{kind} is not in the RetryPolicy's retry_on: not retried")
        if attempt >= self.max_attempts:
            return DeadLetter()
        return self._backoff(attempt, job_id, jitter=True)

    def _backoff(self, attempt: int, job_id: int, *, jitter: bool) -> RetryLater:
        try:
            delay = to_timedelta(self.backoff(attempt), "backoff(attempt)", allow_zero=True)
        except Exception as error:
            # A broken backoff must not strand the job: retry on the default schedule and
            # say so (the worker records it in last_error and logs it).
            return RetryLater(exponential_backoff(attempt), f"{type(error).__name__}: {error}")
        if jitter and self.jitter:
            delay = delay * (1 - self.jitter * jitter_unit(job_id, attempt))
        return RetryLater(delay)

    def _key(self) -> tuple[object, ...]:
        return (self.max_attempts, self.backoff, self.retry_on, self.give_up_on, self.jitter)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RetryPolicy):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        extra = "".join(
            f", {name}={value!r}" for name, value in (
                ("retry_on", self.retry_on), ("give_up_on", self.give_up_on),
                ("jitter", self.jitter or None)) if value is not None
        )
        return f"RetryPolicy(max_attempts={self.max_attempts}, backoff={self.backoff!r}{extra})"
