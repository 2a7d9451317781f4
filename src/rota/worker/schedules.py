"""The schedule duty: while a worker leads, fire the schedules at their instants: the
App's schedules in code and the schedules stored at run time (`app.set_schedule`).

It runs in the App's elected maintenance worker (rota.worker.leadership), from the moment
it leads: a worker registers the App's schedules in code the first time it leads, and a
later term of its own resumes with the state on this object.

Theory of operation: when the duty starts it registers the App's schedules in code in the
store (`register_schedules`: a new row records when; an existing one takes this App's
definition). Then it loops. Every step reads the store's rows (`list_schedules`: one
read), so schedules stored, changed, paused, resumed or removed at run time take effect at
the next step, with no restart. What a step fires (`firings`): each schedule in code whose
row holds this App's definition and is not paused, and each stored row, not paused, that
this App can fire: a stored row naming a job this App does not define (or a rule this
rota cannot read) is logged once and skipped, and fired by the workers whose App defines
the job. For every schedule whose instant has come, the step fires the most recent instant
that has come (`due_instant`, from the later of the row's lower bound and the duty's own:
after a downtime only the latest missed one) with one store call, `fire_schedule`, which
enqueues the job due at that instant unless another process fired it first, or the row
changed or was paused meanwhile (the store decides, atomically). Between steps it sleeps
until the earliest next instant, but never longer than the shortest poll interval of the
process's groups or a second, whichever is longer: so a change made at run time is seen
within that, and a clock adjustment delays nothing by more than that.

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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rota.core.clock import Clock
from rota.core.plurals import counted
from rota.core.schedules import FireOutcome, Schedule, ScheduleRow, due_instant
from rota.store.base import ScheduleStore
from rota.worker.duty import DutyRuntime

logger = logging.getLogger("rota")

# Backoff after a failed step: doubling from the first to the cap.
FIRST_RETRY_S = 0.05
RETRY_CAP_S = 30.0
# Never sleep less than this between two checks (asyncio may wake a little early).
MIN_SLEEP_S = 0.001
# The shortest wait between two reads of the schedule rows when nothing is due sooner.
REREAD_MIN_S = 1.0

StoreCall = Callable[..., Awaitable[Any]]


# What a stored row is to this worker: the schedule to fire, or why it cannot fire it.
FromRow = Callable[[ScheduleRow], "Schedule | str"]


@dataclass(frozen=True, slots=True)
class Firing:
    """One schedule a step may fire: as this App fires it, with the definition the
    store's compare-and-set expects, and the row read this step."""

    schedule: Schedule
    definition: str
    row: ScheduleRow


class Skips:
    """Says once (per schedule and definition) why a schedule is not fired here."""

    def __init__(self) -> None:
        self._said: set[tuple[str, str]] = set()

    def stale(self, schedule: Schedule) -> None:
        if self._first(schedule.name, "stale"):
            logger.warning(
                "schedule %r: the store holds another App's definition of it (registered "
                "by a worker started later, e.g. during a rolling deploy); this worker "
                "does not fire it. Restart it with the current code", schedule.name)

    def unfireable(self, row: ScheduleRow, reason: str) -> None:
        if self._first(row.name, row.definition):
            logger.warning("stored schedule %r: not fired by this worker: %s", row.name,
                           reason)

    def _first(self, name: str, what: str) -> bool:
        if (name, what) in self._said:
            return False
        self._said.add((name, what))
        return True


def firings(code: Sequence[Schedule], rows: Mapping[str, ScheduleRow], from_row: FromRow,
            skips: Skips) -> list[Firing]:
    """What may fire now (see the module docstring): the schedules in code whose row this
    App's definition holds, and the stored rows this App can fire; never a paused one."""
    found: list[Firing] = []
    names = {schedule.name for schedule in code}
    for schedule in code:
        row = rows.get(schedule.name)
        if row is None or row.paused or row.stored:
            continue  # not registered (yet), paused, or stored before the code took it
        if row.definition != schedule.definition:
            skips.stale(schedule)
            continue
        found.append(Firing(schedule, schedule.definition, row))
    for row in rows.values():
        if not row.stored or row.paused or row.name in names:
            continue
        stored = from_row(row)
        if isinstance(stored, str):
            skips.unfireable(row, stored)
            continue
        found.append(Firing(stored, row.definition, row))
    return found


def _fires_none(row: ScheduleRow) -> str:
    return "this worker fires no stored schedules"


class ScheduleDuty:
    """Fires the schedules (in code and stored) while its worker runs (a `Runtime` duty).

    Args:
        schedules: the App's schedules in code.
        store: the App's store.
        clock: where "now" comes from.
        from_row: a stored row as a schedule of this App, or why this App cannot fire it
            (default: none is fired here).
    """

    def __init__(self, schedules: Sequence[Schedule], store: ScheduleStore,
                 clock: Clock, from_row: FromRow | None = None) -> None:
        self.schedules = tuple(schedules)
        self.store = store
        self.clock = clock
        self.from_row = from_row if from_row is not None else _fires_none
        # Owned by the task running the duty; kept here so a restart resumes.
        self.registered = False
        self.lower: dict[str, datetime] = {}  # instants of a schedule must be after this
        self.next_at: dict[str, datetime | None] = {}  # its first instant after `lower`
        self.failures = 0
        self.skips = Skips()
        self.fired = 0
        # Per schedule: ((definition, lower), its first instant after lower).
        self._first: dict[str, tuple[tuple[str, datetime], datetime | None]] = {}

    async def __call__(self, runtime: DutyRuntime) -> None:
        """Run as a duty of `runtime` (see `Runtime(duties=...)`) until it stops."""
        # The rows are read again at least this often (changes made at run time), never
        # more often than once a second: groups polling every 50 ms would otherwise have
        # the elected worker read them twenty times a second, every read a round trip
        # that a slow link makes long and that competes with the lease renewals.
        cap_s = max(REREAD_MIN_S, min(
            (group.runner.options.poll_interval.total_seconds() for group in runtime.groups),
            default=REREAD_MIN_S,
        ))
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
        """Register (first time), read the rows, fire what is due; return the seconds
        until the next instant of any schedule (inf if none will ever fire)."""
        if not self.registered:
            await self._register(call)
        rows = {row.name: row for row in await call(self.store.list_schedules)}
        next_at: dict[str, datetime | None] = {}
        for firing in firings(self.schedules, rows, self.from_row, self.skips):
            schedule = firing.schedule
            lower = max(self.lower.get(schedule.name, firing.row.lower), firing.row.lower)
            self.lower[schedule.name] = lower
            now = self.clock.now()
            first = self._first_after(firing, lower)
            if first is None or first > now:  # nothing due: no rule evaluated again
                next_at[schedule.name] = first
                continue
            fire_at = due_instant(schedule.rule, lower, now)
            if fire_at is not None:
                outcome: FireOutcome = await call(self._fire, firing, fire_at, now)
                if outcome.fired:
                    hint(schedule.queue)
                if outcome.current:  # else the row changed: the next step reads it again
                    lower = fire_at
            self.lower[schedule.name] = lower
            next_at[schedule.name] = schedule.rule.next_after(max(lower, now))
        self.next_at = next_at
        now = self.clock.now()
        upcoming = [at for at in next_at.values() if at is not None]
        return max((min(upcoming) - now).total_seconds(), 0.0) if upcoming else float("inf")

    def _first_after(self, firing: Firing, lower: datetime) -> datetime | None:
        """The schedule's first instant after `lower`, computed once per definition and
        lower bound: a step over many schedules, none due, evaluates no rule."""
        key = (firing.definition, lower)
        cached = self._first.get(firing.schedule.name)
        if cached is None or cached[0] != key:
            cached = (key, firing.schedule.rule.next_after(lower))
            self._first[firing.schedule.name] = cached
        return cached[1]

    async def _register(self, call: StoreCall) -> None:
        if self.schedules:
            await call(self.store.register_schedules,
                       [schedule.registration() for schedule in self.schedules],
                       self.clock.now())
            logger.info("schedules: registered %s", ", ".join(s.name for s in self.schedules))
        self.registered = True

    def _fire(self, firing: Firing, fire_at: datetime, now: datetime) -> FireOutcome:
        """Fire `fire_at` and report it, both on the store's thread: a worker stopping
        while the fire is in the store cancels the duty's wait, not this, so a fire the
        store committed is always logged."""
        schedule = firing.schedule
        outcome = self.store.fire_schedule(schedule.name, firing.definition,
                                           schedule.new_job(fire_at), now)
        if outcome.fired:
            self.fired += 1
            logger.info("schedule %r fired job %d for %s", schedule.name, outcome.job_id,
                        fire_at.isoformat())
        else:
            logger.debug("schedule %r: %s was fired elsewhere, or the schedule changed",
                         schedule.name, fire_at.isoformat())
        return outcome


def fire_due_now(store: ScheduleStore, schedules: Sequence[Schedule], now: datetime,
                 from_row: FromRow, skips: Skips) -> list[tuple[Schedule, FireOutcome]]:
    """Fire, at `now`, every schedule (in code and stored) that has an instant due (the
    most recent one), reading the rows from the store. For `run_until_idle()`. Blocking."""
    rows = {row.name: row for row in store.list_schedules()}
    fired: list[tuple[Schedule, FireOutcome]] = []
    for firing in firings(schedules, rows, from_row, skips):
        fire_at = due_instant(firing.schedule.rule, firing.row.lower, now)
        if fire_at is not None:
            outcome = store.fire_schedule(firing.schedule.name, firing.definition,
                                          firing.schedule.new_job(fire_at), now)
            fired.append((firing.schedule, outcome))
    return fired
