"""Durations: every duration argument in rota's API is a `timedelta` or a number of seconds.

Pure; imports nothing from rota.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

Duration = timedelta | float | int


def to_timedelta(value: object, what: str, *, allow_zero: bool = False) -> timedelta:
    """Turn a duration argument into a `timedelta`.

    Raises:
        TypeError: if `value` is neither a timedelta nor a number.
        ValueError: if it is negative (or zero, unless `allow_zero`), or not finite.
    """
    if isinstance(value, timedelta):
        delta = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            finite = math.isfinite(value)
            delta = timedelta(seconds=value) if finite else timedelta(0)
        except OverflowError:  # an int too big for a float, or more days than timedelta holds
            amount = f"{value:g}" if isinstance(value, float) else f"about 2**{value.bit_length()}"
            raise ValueError(
                f"{what} of {amount} seconds is too long: a duration holds at most "
                f"{timedelta.max.days:,} days; give a shorter one"
            ) from None
        if not finite:
            raise ValueError(f"{what} must be a finite number of seconds; got {value!r}")
    else:
        raise TypeError(
            f"{what} must be a timedelta or a number of seconds; got {value!r}"
        )
    if delta < timedelta(0) or (delta == timedelta(0) and not allow_zero):
        bound = "zero or more" if allow_zero else "positive"
        raise ValueError(f"{what} must be {bound}; got {delta.total_seconds()} s")
    return delta


def due_after(now: datetime, delay: timedelta, what: str = "delay") -> datetime:
    """`now + delay`, the due time of a job enqueued with a delay.

    Raises:
        ValueError: if that lies past the last datetime (the end of year 9999).
    """
    try:
        return now + delay
    except OverflowError:
        raise ValueError(
            f"{what} of {delay.total_seconds():g} s puts the due time past the year 9999; "
            "give a shorter one"
        ) from None


def short_duration(seconds: float) -> str:
    """A duration as people read it in a table or a message: "45 s", "12 min", "3 h"
    (whole units, rounded down; under two minutes in seconds, under two hours in minutes)."""
    whole = max(0, int(seconds))
    if whole < 120:
        return f"{whole} s"
    if whole < 7200:
        return f"{whole // 60} min"
    return f"{whole // 3600} h"
