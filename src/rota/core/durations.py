"""Durations: every duration argument in rota's API is a `timedelta` or a number of seconds.

Pure; imports nothing from rota.
"""

from __future__ import annotations

import math
from datetime import timedelta

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
        if not math.isfinite(value):
            raise ValueError(f"{what} must be a finite number of seconds; got {value!r}")
        delta = timedelta(seconds=value)
    else:
        raise TypeError(
            f"{what} must be a timedelta or a number of seconds; got {value!r}"
        )
    if delta < timedelta(0) or (delta == timedelta(0) and not allow_zero):
        bound = "zero or more" if allow_zero else "positive"
        raise ValueError(f"{what} must be {bound}; got {delta.total_seconds()} s")
    return delta
