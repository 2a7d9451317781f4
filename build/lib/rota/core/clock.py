"""Clocks: where "now" comes from.

Owns the `Clock` protocol, `SystemClock` (the wall clock, the only place in rota that reads
it) and `VirtualClock` (a clock tests move by hand). Every time in rota is a timezone-aware
UTC datetime; durations are `timedelta` or seconds.

Pure apart from `SystemClock.now()`; imports nothing from rota but `rota.core.durations`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

from rota.core.durations import Duration, to_timedelta


def ensure_utc(moment: datetime, what: str = "time") -> datetime:
    """Return `moment` in UTC.

    Raises:
        ValueError: if `moment` is naive (has no tzinfo), or out of range once in UTC.
    """
    if not isinstance(moment, datetime):
        raise TypeError(f"{what} must be a datetime; got {moment!r}")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(
            f"{what} must be timezone-aware; got naive {moment.isoformat()} "
            "(use datetime(..., tzinfo=UTC))"
        )
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # e.g. 9999-12-31T23:00-05:00 is past the last UTC datetime
        raise ValueError(
            f"{what} {moment.isoformat()} lies outside the datetimes UTC can hold "
            "(years 1 to 9999); give a time within them"
        ) from None


@runtime_checkable
class Clock(Protocol):
    """Anything with a `now()` that returns an aware UTC datetime."""

    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


DEFAULT_VIRTUAL_START = datetime(2026, 1, 1, tzinfo=UTC)


class VirtualClock:
    """A clock that moves only when told to, for deterministic tests.

    Args:
        start: the initial time (aware); defaults to 2026-01-01T00:00:00Z.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = ensure_utc(start if start is not None else DEFAULT_VIRTUAL_START, "start")

    def now(self) -> datetime:
        return self._now

    def advance(self, by: Duration) -> datetime:
        """Move forward by `by` (a timedelta or seconds) and return the new time.

        Raises:
            ValueError: if `by` is negative.
        """
        delta = to_timedelta(by, "advance", allow_zero=True)
        self._now += delta
        return self._now

    def set(self, moment: datetime) -> None:
        """Jump to `moment` (aware), forwards or backwards."""
        self._now = ensure_utc(moment, "moment")

    def __repr__(self) -> str:
        return f"VirtualClock({self._now.isoformat()})"


__all__ = ["Clock", "SystemClock", "VirtualClock", "ensure_utc"]
