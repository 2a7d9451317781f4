"""The store's time, read on this machine: how processes whose clocks disagree agree.

Theory of operation: every store call takes `now` from its caller, so a machine whose clock
runs ahead would see live leases as expired and jobs as due too early, and one running
behind would enqueue "now" in the past of everyone else's future. `StoreClock` is the App's
clock when it would otherwise be the wall clock: it asks the store for its own time
(`Store.store_time()`, the database server's clock on PostgreSQL) and from then on counts
forward on this process's monotonic clock. So its `now()` follows the store's clock, and a
step of this machine's wall clock (NTP, a VM resumed from pause) does not move it. It
measures again every `refresh` (workers do it with their registry heartbeat, in the
store's thread, so the first `now()` after a refresh interval rarely waits on the store).

A reading is taken as NTP takes one: the answer was true somewhere within the round trip,
so its middle is taken as the moment, give or take half the round trip (its
uncertainty), however slow or asymmetric the link. A measurement takes up to
`MAX_READINGS` readings, stopping at a fast one (the first may carry a connect) or at one
as fast as the link has been. The clock keeps the recent readings (`KEEP_READINGS`, none
older than `KEEP_READINGS_FOR`), each one's uncertainty growing with its age by `DRIFT`
(the two clocks may run at slightly different rates), and follows the one with the
smallest; a new reading that contradicts an older one (the store's clock was set, or this
machine slept) drops the older. A best reading still uncertain by more than
`MAX_UNCERTAINTY` is not applied: `now()` keeps the last reading applied, or the wall
clock before any, and the clock logs once at WARNING.

A store without a clock of its own (memory: one process; SQLite: one host, whose processes
share its clock) answers None, and `now()` is then the wall clock itself, with no store
call at all. If measuring fails (the store is down), `now()` keeps the last measurement, or
the wall clock before the first, logs once, and measures again after `RETRY_AFTER`.

A disagreement over `WARN_OVER` is logged once at WARNING with the offset (again only if
the offset moves by more than that since). Imports the core's clock and the store contract.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from rota.core.clock import Clock, SystemClock
from rota.store.base import Store, StoreError

logger = logging.getLogger("rota")

# How often a StoreClock measures the store's clock again, at most this long apart.
REFRESH = timedelta(seconds=60)
# After a failed measurement, how long it waits before the next try.
RETRY_AFTER = timedelta(seconds=5)
# A reading whose round trip took at most this long ends a measurement.
SLOW_READING_S = 0.005
# The most readings one measurement takes.
MAX_READINGS = 3
# A later reading of a measurement whose round trip is within this factor of the fastest
# reading kept ends it too: the link is that slow, and reading again will not do better.
AS_FAST_AS_THE_LINK = 1.25
# How many recent readings are kept, and for how long.
KEEP_READINGS = 8
KEEP_READINGS_FOR = timedelta(minutes=10)
# How fast this machine's monotonic clock and the store's clock may drift apart: 100 ppm,
# a crystal oscillator's usual tolerance (NTP assumes 15). It ages a kept reading's
# uncertainty: 6 ms a minute, 60 ms at KEEP_READINGS_FOR.
DRIFT = 100e-6
# The most uncertain a reading may be and still be applied.
MAX_UNCERTAINTY = timedelta(seconds=1)
# An offset this large is worth a WARNING.
WARN_OVER = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class _Reading:
    """One reading of the store's clock: its answer, the monotonic seconds at the middle
    of the round trip, the round trip's seconds, and this machine's wall clock then less
    the answer."""

    answer: datetime
    middle_s: float
    round_trip_s: float
    offset: timedelta

    def uncertainty_s(self, at_s: float) -> float:
        """How far the store's time this reading gives for monotonic second `at_s` may be
        off: half its round trip, plus what the two clocks may have drifted apart since."""
        return self.round_trip_s / 2 + abs(at_s - self.middle_s) * DRIFT

    def contradicts(self, later: _Reading) -> bool:
        """Whether `later` falls outside what this reading allows for its moment."""
        predicted = self.answer + timedelta(seconds=later.middle_s - self.middle_s)
        gap_s = abs((later.answer - predicted).total_seconds())
        return gap_s > self.uncertainty_s(later.middle_s) + later.round_trip_s / 2


class StoreClock:
    """`now()` by the store's clock (see the module docstring).

    Args:
        store: the store whose time is "now".
        refresh: how old a measurement may get before `now()` measures again.
        wall: the wall clock of this machine (tests pass a stand-in).
        monotonic: seconds on a clock that never steps (tests pass a stand-in).
    """

    def __init__(
        self, store: Store, *, refresh: timedelta = REFRESH, wall: Clock | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self._refresh_s = refresh.total_seconds()
        self._wall = wall if wall is not None else SystemClock()
        self._monotonic = monotonic
        # The reading applied, or None: no store clock (or none precise enough yet), the
        # wall is "now". Replaced as a whole, so readers in other threads never see half
        # of a new one.
        self._applied: _Reading | None = None
        # The recent readings, oldest first (only the measuring thread touches them).
        self._readings: list[_Reading] = []
        self._next_measure = float("-inf")  # monotonic seconds
        self._measuring = threading.Lock()
        self._measured = False
        self._warned: timedelta | None = None
        self._failing = False
        self._imprecise = False

    def now(self) -> datetime:
        # Before the first measurement every caller waits for it; after, a caller that
        # finds another thread measuring goes on with the last one.
        if (self._monotonic() >= self._next_measure
                and self._measuring.acquire(blocking=not self._measured)):
            try:
                if self._monotonic() >= self._next_measure:
                    self._measure()
            finally:
                self._measuring.release()
        applied = self._applied
        if applied is None:
            return self._wall.now()
        return applied.answer + timedelta(seconds=self._monotonic() - applied.middle_s)

    def measure(self) -> None:
        """Measure the store's clock now (a worker's registry duty calls this with each
        heartbeat, in the store's thread). Never raises: a failure is logged once."""
        with self._measuring:
            self._measure()

    @property
    def offset(self) -> timedelta:
        """How far this machine's wall clock runs ahead of the store's (negative: behind),
        by the reading applied; zero for a store without a clock of its own, or before a
        reading was applied."""
        applied = self._applied
        if applied is None:
            return timedelta(0)
        return self._wall.now() - (
            applied.answer + timedelta(seconds=self._monotonic() - applied.middle_s))

    @property
    def uncertainty(self) -> timedelta | None:
        """How far `now()` may be from the store's time: half the round trip of the
        reading applied, grown with its age by `DRIFT`; None while `now()` is the wall
        clock (no store clock, or no reading applied yet)."""
        applied = self._applied
        if applied is None:
            return None
        return timedelta(seconds=applied.uncertainty_s(self._monotonic()))

    def _measure(self) -> None:
        self._measured = True
        taken: list[_Reading] = []
        try:
            for _ in range(MAX_READINGS):
                reading = self._read()
                if reading is None:  # the store has no clock of its own
                    self._applied, self._readings = None, []
                    self._failing = False
                    self._next_measure = self._monotonic() + self._refresh_s
                    return
                taken.append(reading)
                if self._enough(reading, taken):
                    break
        except StoreError as error:
            if not taken:
                if not self._failing:
                    logger.warning(
                        "could not read the store's clock (%s); keeping %s until it "
                        "answers", error, "the last offset" if self._applied
                        else "this machine's clock")
                self._failing = True
                self._next_measure = self._monotonic() + RETRY_AFTER.total_seconds()
                return
        self._failing = False
        self._next_measure = self._monotonic() + self._refresh_s
        for reading in taken:
            self._keep(reading)
        self._apply_best()

    def _enough(self, reading: _Reading, taken: list[_Reading]) -> bool:
        """Whether `reading`, the last of `taken`, ends the measurement: it was fast, or
        (not the first of this measurement, which may carry a connect, unless readings
        were kept before) as fast as the fastest kept."""
        if reading.round_trip_s <= SLOW_READING_S:
            return True
        others = [kept.round_trip_s for kept in (*self._readings, *taken[:-1])]
        return bool(others) and reading.round_trip_s <= min(others) * AS_FAST_AS_THE_LINK

    def _keep(self, reading: _Reading) -> None:
        """Add `reading` to the recent readings, dropping those it contradicts, those
        older than KEEP_READINGS_FOR and the oldest beyond KEEP_READINGS."""
        oldest_s = reading.middle_s - KEEP_READINGS_FOR.total_seconds()
        kept = [old for old in self._readings
                if old.middle_s >= oldest_s and not old.contradicts(reading)]
        self._readings = [*kept, reading][-KEEP_READINGS:]

    def _apply_best(self) -> None:
        """Follow the kept reading that is least uncertain now, if it is within
        MAX_UNCERTAINTY; else keep the one applied (or the wall clock) and say so once."""
        now_s = self._monotonic()
        best = min(self._readings, key=lambda reading: reading.uncertainty_s(now_s))
        uncertainty_s = best.uncertainty_s(now_s)
        if uncertainty_s <= MAX_UNCERTAINTY.total_seconds():
            self._applied = best
            self._imprecise = False
            self._warn_if_off(self.offset)
            return
        if not self._imprecise:
            offset_s = best.offset.total_seconds()
            logger.warning(
                "could not read the store's clock (%s) to within %.0f s: its best reading "
                "says this machine's clock runs %.3f s %s the store's, give or take %.3f s "
                "(half its %.3f s round trip); keeping %s. Check the network to the store",
                self.store.url, MAX_UNCERTAINTY.total_seconds(), abs(offset_s),
                "ahead of" if offset_s > 0 else "behind", uncertainty_s,
                best.round_trip_s, "the last offset applied" if self._applied
                else "this machine's clock")
        self._imprecise = True

    def _read(self) -> _Reading | None:
        """One reading of the store's clock, or None for a store without a clock."""
        before_s, before = self._monotonic(), self._wall.now()
        answer = self.store.store_time()
        after_s = self._monotonic()
        if answer is None:
            return None
        # The answer was true somewhere in the round trip: take its middle.
        middle_s = (before_s + after_s) / 2
        offset = before + timedelta(seconds=middle_s - before_s) - answer
        return _Reading(answer, middle_s, after_s - before_s, offset)

    def _warn_if_off(self, offset: timedelta) -> None:
        if abs(offset) <= WARN_OVER:
            return
        if self._warned is not None and abs(offset - self._warned) <= WARN_OVER:
            return
        self._warned = offset
        logger.warning(
            "this machine's clock runs %.3f s %s the store's (%s); rota uses the store's "
            "time for leases, due times and schedules. Check this machine's time sync (NTP)",
            abs(offset.total_seconds()), "ahead of" if offset > timedelta(0) else "behind",
            self.store.url)

    def __repr__(self) -> str:
        return f"StoreClock({self.store.url!r})"


def store_clock_for(store: Store, clock: Clock | None) -> Clock:
    """The clock an App on `store` uses: `clock` as given, except that the wall clock
    (None or a `SystemClock`) becomes a `StoreClock`. A `VirtualClock` is never corrected."""
    if clock is None or isinstance(clock, SystemClock):
        return StoreClock(store)
    return clock


__all__ = ["StoreClock", "store_clock_for"]
