"""The store's time, read on this machine: how processes whose clocks disagree agree.

Theory of operation: every store call takes `now` from its caller, so a machine whose clock
runs ahead would see live leases as expired and jobs as due too early, and one running
behind would enqueue "now" in the past of everyone else's future. `StoreClock` is the App's
clock when it would otherwise be the wall clock: it asks the store for its own time
(`Store.store_time()`, the database server's clock on PostgreSQL), takes the midpoint of
the round trip as the moment the answer was true, and from then on counts forward on this
process's monotonic clock. So its `now()` follows the store's clock, and a step of this
machine's wall clock (NTP, a VM resumed from pause) does not move it. It measures again
every `refresh` (workers do it with their registry heartbeat, in the store's thread, so the
first `now()` after a refresh interval rarely waits on the store).

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
from datetime import datetime, timedelta

from rota.core.clock import Clock, SystemClock
from rota.store.base import Store, StoreError

logger = logging.getLogger("rota")

# How often a StoreClock measures the store's clock again, at most this long apart.
REFRESH = timedelta(seconds=60)
# After a failed measurement, how long it waits before the next try.
RETRY_AFTER = timedelta(seconds=5)
# A reading whose round trip took longer than this is taken again.
SLOW_READING_S = 0.005
# An offset this large is worth a WARNING.
WARN_OVER = timedelta(seconds=1)


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
        # (store time, monotonic seconds then), or None: no store clock, the wall is "now".
        # Replaced as a whole, so readers in other threads never see half of a new one.
        self._reference: tuple[datetime, float] | None = None
        self._next_measure = float("-inf")  # monotonic seconds
        self._measuring = threading.Lock()
        self._measured = False
        self._warned: timedelta | None = None
        self._failing = False

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
        reference = self._reference
        if reference is None:
            return self._wall.now()
        at, then = reference
        return at + timedelta(seconds=self._monotonic() - then)

    def measure(self) -> None:
        """Measure the store's clock now (a worker's registry duty calls this with each
        heartbeat, in the store's thread). Never raises: a failure is logged once."""
        with self._measuring:
            self._measure()

    @property
    def offset(self) -> timedelta:
        """How far this machine's wall clock runs ahead of the store's (negative: behind),
        as last measured; zero for a store without a clock of its own, or before the first
        measurement."""
        reference = self._reference
        if reference is None:
            return timedelta(0)
        at, then = reference
        return self._wall.now() - (at + timedelta(seconds=self._monotonic() - then))

    def _measure(self) -> None:
        self._measured = True
        try:
            reading = self._read()
            # A slow round trip (the first one also connects, and may migrate) says little
            # about when the answer was true: read again and keep the tighter one.
            if reading is not None and reading[2] > SLOW_READING_S:
                again = self._read()
                if again is None or again[2] < reading[2]:
                    reading = again
        except StoreError as error:
            if not self._failing:
                logger.warning("could not read the store's clock (%s); keeping %s until it "
                               "answers", error, "the last offset" if self._reference
                               else "this machine's clock")
            self._failing = True
            self._next_measure = self._monotonic() + RETRY_AFTER.total_seconds()
            return
        self._failing = False
        self._next_measure = self._monotonic() + self._refresh_s
        if reading is None:
            self._reference = None
            return
        answer, middle_s, _, offset = reading
        self._reference = (answer, middle_s)
        self._warn_if_off(offset)

    def _read(self) -> tuple[datetime, float, float, timedelta] | None:
        """One reading of the store's clock: (its answer, the monotonic middle of the round
        trip, the round trip's seconds, the wall clock then less the answer), or None."""
        before_s, before = self._monotonic(), self._wall.now()
        answer = self.store.store_time()
        after_s = self._monotonic()
        if answer is None:
            return None
        # The answer was true somewhere in the round trip: take its middle.
        middle_s = (before_s + after_s) / 2
        offset = before + timedelta(seconds=middle_s - before_s) - answer
        return answer, middle_s, after_s - before_s, offset

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
