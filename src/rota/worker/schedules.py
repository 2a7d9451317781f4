"""The schedule duty: while a worker leads, fire the App's schedules at their instants.

It runs in the App's elected maintenance worker (rota.worker.leadership), from the moment
it leads: a worker registers the schedules the first time it leads, and a later term of its
own resumes with the state on this object.

Theory of operation: when the duty starts it registers the App's schedules in the store
(`register_schedules`: a new row records when; an existing one takes this App's
definition) and reads the rows back, which gives each schedule its lower bound (the later
of its registration and its last fire). Then it loops: for every schedule whose next
instant has come, it fires the most recent instant that has come (`due_instant`: after a
downtime only the latest missed one) with one store call, `fire_schedule`, which enqueues
the job due at that instant unless another process fired it first (the store decides,
atomically). Either way the lower bound moves to that instant. Between checks it sleeps
until the earliest next instant, but never longer than the shortest poll interval of the
process's groups, so a clock adjustment delays nothing by more than that, and a fire is
never late by a poll interval.

A fire wakes this process's groups serving the job's Queue (`Runtime.hint`); other
processes learn of the job from the store's wake-up hints or their next poll.

Failures: the duty survives any exception. The first failure of a streak is logged at
ERROR with its traceback, later ones in one line; it retries after a backoff (doubling
from 50 ms, at most `RETRY_CAP_S`). A fire that failed is retried (the
lower bound did not move), so an instant is never lost to a store error, and never fired
twice (the store's compare-and-set).

`fire_due_now` is the same firing for `run_until_idle()`: at the clock's time, once,
before its passes.

Imports the core, the store contract and the duty protocol (rota.worker.duty).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from rota.core.clock import Clock
from rota.core.plurals import counted
from rota.core.schedules import FireOutcome, Schedule, due_instant
from rota.store.base import ScheduleStore
from rota.worker.duty import DutyRuntime

logger = logging.getLogger("rota")

# Backoff after a failed step: doubling from the first to the cap.
FIRST_RETRY_S = 0.05
RETRY_CAP_S = 30.0
# Never sleep less than this between two checks (asyncio may wake a little early).
MIN_SLEEP_S = 0.001

StoreCall = Callable[..., Awaitable[Any]]


class ScheduleDuty:
    """Fires an App's schedules while its worker runs (a `Runtime` duty).

    Args:
        schedules: the App's schedules.
        store: the App's store.
        clock: where "now" comes from.
    """

    def __init__(self, schedules: Sequence[Schedule], store: ScheduleStore,
                 clock: Clock) -> None:
        self.schedules = tuple(schedules)
        self.store = store
        self.clock = clock
        # Owned by the task running the duty; kept here so a restart resumes.
        self.registered = False
        self.lower: dict[str, datetime] = {}  # instants of a schedule must be after this
        self.next_at: dict[str, datetime | None] = {}  # its first instant after `lower`
        self.failures = 0
        self.stale: set[str] = set()  # schedules another App's definition owns (warned)
        self.fired = 0

    async def __call__(self, runtime: DutyRuntime) -> None:
        """Run as a duty of `runtime` (see `Runtime(duties=...)`) until it stops."""
        cap_s = min(
            (group.runner.options.poll_interval.total_seconds() for group in runtime.groups),
            default=1.0,
        )
        await self.run_forever(runtime.store_call, runtime.sleep_unless_stopping,
                               lambda: runtime.stopping, runtime.hint, cap_s)

    async def run_forever(
        self, call: StoreCall, pause: Callable[[float], Awaitable[None]],
        stopping: Callable[[], bool], hint: Callable[[str], None], cap_s: float,
    ) -> None:
        """Check, fire, sleep until the next instant (at most `cap_s`), until `stopping()`."""
        while not stopping():
            try:
                delay_s = min(await self.step(call, hint), cap_s)
            except Exception:
                self.failures += 1
                delay_s = min(FIRST_RETRY_S * 2 ** (self.failures - 1), RETRY_CAP_S)
                if self.failures == 1:
                    logger.exception("schedules: firing failed; retrying in %.2f s (later "
                                     "failures are logged in one line)", delay_s)
                else:
                    logger.warning("schedules: firing failed again (%d in a row); retrying "
                                   "in %.2f s", self.failures, delay_s)
            else:
                if self.failures:
                    logger.warning("schedules: firing works again after %s",
                                   counted(self.failures, "failure"))
                self.failures = 0
            await pause(max(delay_s, MIN_SLEEP_S))

    async def step(self, call: StoreCall, hint: Callable[[str], None]) -> float:
        """Register (first time), fire what is due; return the seconds until the next
        instant of any schedule (inf if none will ever fire)."""
        if not self.registered:
            await self._register(call)
        for schedule in self.schedules:
            next_at = self.next_at.get(schedule.name)
            now = self.clock.now()
            if next_at is None or next_at > now:
                continue
            lower = self.lower[schedule.name]
            fire_at = due_instant(schedule.rule, lower, now)
            if fire_at is not None:
                outcome: FireOutcome = await call(self._fire, schedule, fire_at, now)
                if outcome.fired:
                    hint(schedule.queue)
                lower = fire_at
            self.lower[schedule.name] = lower
            self.next_at[schedule.name] = schedule.rule.next_after(max(lower, now))
        now = self.clock.now()
        upcoming = [at for at in self.next_at.values() if at is not None]
        return max((min(upcoming) - now).total_seconds(), 0.0) if upcoming else float("inf")

    async def _register(self, call: StoreCall) -> None:
        now = self.clock.now()
        await call(self.store.register_schedules,
                   [schedule.registration() for schedule in self.schedules], now)
        rows = {row.name: row for row in await call(self.store.list_schedules)}
        for schedule in self.schedules:
            row = rows.get(schedule.name)
            lower = now if row is None else row.lower
            self.lower[schedule.name] = lower
            self.next_at[schedule.name] = schedule.rule.next_after(lower)
            if row is not None and row.definition != schedule.definition:
                self._warn_stale(schedule)
        self.registered = True
        logger.info("schedules: registered %s", ", ".join(s.name for s in self.schedules))

    def _fire(self, schedule: Schedule, fire_at: datetime, now: datetime) -> FireOutcome:
        """Fire `fire_at` and report it, both on the store's thread: a worker stopping
        while the fire is in the store cancels the duty's wait, not this, so a fire the
        store committed is always logged."""
        outcome = self.store.fire_schedule(schedule.name, schedule.definition,
                                           schedule.new_job(fire_at), now)
        self._report(schedule, fire_at, outcome)
        return outcome

    def _report(self, schedule: Schedule, fire_at: datetime, outcome: FireOutcome) -> None:
        if outcome.fired:
            self.fired += 1
            logger.info("schedule %r fired job %d for %s", schedule.name, outcome.job_id,
                        fire_at.isoformat())
        elif not outcome.current:
            self._warn_stale(schedule)
        else:
            logger.debug("schedule %r: %s was fired elsewhere", schedule.name,
                         fire_at.isoformat())

    def _warn_stale(self, schedule: Schedule) -> None:
        if schedule.name not in self.stale:
            self.stale.add(schedule.name)
            logger.warning(
                "schedule %r: the store holds another App's definition of it (registered "
                "by a worker started later, e.g. during a rolling deploy); this worker "
                "does not fire it. Restart it with the current code", schedule.name)


def fire_due_now(store: ScheduleStore, schedules: Sequence[Schedule],
                 now: datetime) -> list[tuple[Schedule, FireOutcome]]:
    """Fire, at `now`, every schedule that has an instant due (the most recent one),
    reading the rows from the store. For `run_until_idle()`. Blocking."""
    if not schedules:
        return []
    rows = {row.name: row for row in store.list_schedules()}
    fired: list[tuple[Schedule, FireOutcome]] = []
    for schedule in schedules:
        row = rows.get(schedule.name)
        if row is None:
            continue
        fire_at = due_instant(schedule.rule, row.lower, now)
        if fire_at is not None:
            outcome = store.fire_schedule(schedule.name, schedule.definition,
                                          schedule.new_job(fire_at), now)
            fired.append((schedule, outcome))
    return fired
