"""Queue rate limits: `QueueRate` (jobs per period, with a burst) and its token bucket.

Theory of operation: a rated Queue holds a bucket of at most `burst` tokens, refilled at
`jobs` tokens per `per`; each job claimed takes one, and a claim takes only whole tokens.
The bucket is kept as one instant, `empty_at`: the time at which it would be (or was)
empty, so that at `now` it holds `min(burst, (now - empty_at) * jobs / per)` tokens.
Taking `k` tokens moves `empty_at` forward by `k * per / jobs`. A bucket never taken from
is full (`Bucket` None), so setting a rate needs no clock.

The arithmetic is exact: `empty_at` is kept in units of 1/jobs microsecond, stored as
whole microseconds and a remainder (`Bucket`), so no rounding ever gives a token early.
Hence, over any interval of length T, claims whose `now` lies in it take at most
`burst + jobs * T / per` tokens, whatever their order (each take first raises `empty_at`
to at least `now - burst * per / jobs`, then adds `k * per / jobs` and never passes `now`).

Every store and the simulator apply `available` and `take` here; the stores keep the
bucket beside the Queue's settings and update it in the claim's own transaction.

Pure: no I/O, no clock. Imports only `rota.core.durations` and `rota.core.settings_range`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from rota.core.durations import to_timedelta
from rota.core.settings_range import checked_setting

__all__ = [
    "PERIOD_FORM", "RATE_FORM", "Bucket", "QueueRate", "RatedQueue", "available",
    "cap_by_tokens", "check_rate", "describe_period", "next_token_at", "parse_period",
    "parse_rate", "settle", "stored_rate", "take", "validate_rate",
]

_US = timedelta(microseconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The longest a bucket may take to refill from empty: the stores keep `empty_at` as
# microseconds in a 64-bit integer, and no sensible rate comes near it.
MAX_REFILL = timedelta(days=365_000)


@dataclass(frozen=True, slots=True)
class QueueRate:
    """A Queue's rate limit: at most `burst` jobs at once, refilled at `jobs` per `per`.

    Over any interval T, at most `burst + jobs * T / per` jobs of the Queue are claimed,
    by all workers together (`App.set_queue_rate`).

    Attributes:
        jobs: how many tokens are added per `per` (a whole number of at least 1).
        per: the period of the rate, a positive `timedelta`.
        burst: the bucket's size, the most jobs claimed at once after a quiet spell (in
            `QueueInfo.rate`, the burst in force: `jobs` when none was given).
    """

    jobs: int
    per: timedelta
    burst: int

    def __str__(self) -> str:
        burst = "" if self.burst == self.jobs else f" (burst {self.burst})"
        return f"{self.jobs}/{describe_period(self.per)}{burst}"

    @property
    def per_us(self) -> int:
        """`per` in whole microseconds (a timedelta holds no finer unit)."""
        return self.per // _US


RATE_FORM = ("N/PERIOD: N jobs per PERIOD, a number of seconds or a number and a unit "
             "(s, m, h, d), e.g. 10/1m, 6/30s or 100/60")
_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400}


def parse_rate(text: str, burst: int | None = None) -> QueueRate:
    """`10/1m`, `6/30s`, `100/60` (seconds), `1/1.5h` as a `QueueRate` with `burst`.

    Raises:
        ValueError: naming the text and the expected form, or the range a number breaks.
    """
    jobs_text, slash, period_text = text.strip().partition("/")
    seconds = _seconds(period_text)
    try:
        jobs = int(jobs_text)
    except ValueError:
        raise ValueError(f"{text!r} is not a rate; expected {RATE_FORM}") from None
    if not slash or seconds is None:
        raise ValueError(f"{text!r} is not a rate; expected {RATE_FORM}")
    return validate_rate(jobs, seconds, burst)


PERIOD_FORM = "a number of seconds or a number and a unit (s, m, h, d), e.g. 2s, 1.5m or 30"


def parse_period(text: str) -> timedelta:
    """A rate's PERIOD on its own (`30s`, `1m`, `1.5h`, `2`: seconds) as a timedelta of 0
    or more.

    Raises:
        ValueError: naming the text and the expected form.
    """
    seconds = _seconds(text)
    if seconds is None or seconds < 0:
        raise ValueError(f"{text!r} is not a duration; expected {PERIOD_FORM}")
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise ValueError(f"{text!r} is too long a duration") from None


def _seconds(text: str) -> float | None:
    """The seconds of a PERIOD text, None if it is not one (not a finite number)."""
    period_text = text.strip().lower()
    unit = period_text[-1:] if period_text[-1:] in _UNITS else "s"
    number = period_text[:-1] if period_text[-1:] in _UNITS else period_text
    try:
        seconds = float(number) * _UNITS[unit]
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) else None


def describe_period(per: timedelta) -> str:
    """`per` in rota's duration syntax: `1m`, `30s`, `1.5s`, `2h`, `1d`."""
    seconds = per.total_seconds()
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def validate_rate(jobs: object, per: object, burst: object = None) -> QueueRate:
    """The `QueueRate` of `jobs` per `per` with `burst` (None: `jobs`).

    Raises:
        TypeError: if `jobs` or `burst` is not an int (a bool is refused), or `per` is
            neither a timedelta nor a number of seconds.
        ValueError: if `jobs` or `burst` is outside 1 to 2147483647, `per` is not a
            positive duration or is finer than a microsecond, or the bucket would take
            more than 365,000 days to refill.
    """
    count = checked_setting(jobs, "a Queue rate's jobs", minimum=1,
                            none="None for no rate limit")
    period = to_timedelta(per, "a Queue rate's period (per)")
    if period < _US:
        raise ValueError(
            f"a Queue rate's period (per) must be at least a microsecond; got {period!r}")
    size = count if burst is None else checked_setting(
        burst, "a Queue rate's burst", minimum=1, none="None for the rate's jobs")
    if (period // _US) * size > (MAX_REFILL // _US) * count:
        raise ValueError(
            f"a rate of {count} per {period} with burst {size} takes more than "
            f"{MAX_REFILL.days:,} days to refill; give a shorter period or a smaller burst")
    return QueueRate(count, period, size)


def check_rate(rate: object) -> QueueRate | None:
    """`rate` if it is None or a `QueueRate` that `validate_rate` accepts (what a store's
    `set_queue_rate` takes).

    Raises:
        TypeError: if it is neither, or a field has the wrong type.
        ValueError: if a field is out of range (see `validate_rate`).
    """
    if rate is None:
        return None
    if not isinstance(rate, QueueRate):
        raise TypeError(f"a Queue rate must be a rota.QueueRate or None; got {rate!r}")
    return validate_rate(rate.jobs, rate.per, rate.burst)


@dataclass(frozen=True, slots=True)
class Bucket:
    """A rated Queue's bucket once taken from: it is empty at the instant `empty_us` +
    `remainder` / jobs microseconds after the epoch (0 <= remainder < jobs)."""

    empty_us: int
    remainder: int = 0


RatedQueue = tuple[QueueRate, Bucket | None]
"""A rated Queue as a claim reads it: its rate and its bucket (None: full)."""


def stored_rate(jobs: int, per_us: int, burst: int, empty_us: int | None,
                empty_rem: int | None) -> RatedQueue:
    """A rated Queue from a store's settings row (migration 13's columns)."""
    bucket = None if empty_us is None else Bucket(empty_us, empty_rem or 0)
    return QueueRate(jobs, timedelta(microseconds=per_us), burst), bucket


def cap_by_tokens(rated: Mapping[str, RatedQueue], asks: Sequence[tuple[str, int]],
                  now: datetime) -> tuple[list[tuple[str, int]], set[str]]:
    """A claim's asks (Queue, most to take), each rated Queue's capped by its tokens at
    `now`; and the Queues whose tokens were fewer than asked (starved)."""
    capped: list[tuple[str, int]] = []
    starved: set[str] = set()
    for queue, count in asks:
        one = rated.get(queue)
        if one is not None:
            tokens = available(one[0], one[1], now)
            if tokens < count:
                count = tokens
                starved.add(queue)
        capped.append((queue, count))
    return capped, starved


def settle(rated: Mapping[str, RatedQueue], taken: Mapping[str, int], starved: Iterable[str],
           now: datetime) -> tuple[dict[str, Bucket], datetime | None]:
    """After a claim at `now` took `taken` jobs per Queue: the new buckets of the rated
    Queues it took from, and when the first of the `starved` ones has a token again."""
    buckets = {queue: take(*rated[queue], now, count)
               for queue, count in taken.items() if count and queue in rated}
    due = [next_token_at(rated[queue][0], buckets.get(queue, rated[queue][1]), now)
           for queue in starved]
    return buckets, min(due, default=None)


def _scaled(rate: QueueRate, bucket: Bucket | None, now_us: int) -> int:
    """The bucket's empty instant in 1/jobs microseconds, no earlier than a full bucket's
    at `now_us` (a bucket holds at most `burst` tokens)."""
    full = now_us * rate.jobs - rate.burst * rate.per_us
    if bucket is None:
        return full
    return max(full, bucket.empty_us * rate.jobs + bucket.remainder)


def to_us(at: datetime) -> int:
    """`at` as whole microseconds since the epoch."""
    return (at - _EPOCH) // _US


def available(rate: QueueRate, bucket: Bucket | None, now: datetime) -> int:
    """The whole tokens in the bucket at `now`: how many jobs a claim may take."""
    now_us = to_us(now)
    return max(0, (now_us * rate.jobs - _scaled(rate, bucket, now_us)) // rate.per_us)


def take(rate: QueueRate, bucket: Bucket | None, now: datetime, count: int) -> Bucket:
    """The bucket after a claim at `now` took `count` tokens (at most `available`).

    Raises:
        ValueError: if `count` is negative or more than the tokens available.
    """
    if not 0 <= count <= available(rate, bucket, now):
        raise ValueError(f"a claim may take 0 to {available(rate, bucket, now)} tokens of "
                         f"this bucket at {now.isoformat()}; got {count}")
    scaled = _scaled(rate, bucket, to_us(now)) + count * rate.per_us
    empty_us, remainder = divmod(scaled, rate.jobs)
    return Bucket(empty_us, remainder)


def next_token_at(rate: QueueRate, bucket: Bucket | None, now: datetime) -> datetime:
    """When the bucket next holds a whole token: `now` if it holds one already."""
    if available(rate, bucket, now) > 0:
        return now
    scaled = _scaled(rate, bucket, to_us(now)) + rate.per_us
    return _EPOCH + _US * -(-scaled // rate.jobs)
