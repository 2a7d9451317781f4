"""Schedules: the rules that say when a periodic job fires, and what a store keeps of them.

Theory of operation
-------------------
A schedule's *rule* defines a set of *fire instants* (aware UTC datetimes):

- `CronRule`: a 5-field cron expression (or an alias such as `@daily`) read in a time zone,
  evaluated by `cronsim`, which follows Debian's cron. Daylight-saving transitions, for
  expressions whose minute and hour fields are both fixed (`30 2 * * *`, `0 9-17 * * 1-5`):
  a local time skipped by the clock moving forward fires once, at the first valid instant
  after the gap (03:00); a local time the clock passes twice fires once, at the first pass.
  Expressions with `*` in the minute or hour field (`*/15 * * * *`, `0 * * * *`) fire at
  every real instant whose local time matches: both passes of a repeated hour, nothing for
  the hour that does not exist.
- `EveryRule`: a fixed interval of real time, anchored at the Unix epoch: the instants are
  the whole multiples of the interval since 1970-01-01T00:00Z (`every=60` fires on every
  minute, `every=3600` on every hour, in UTC). Every process computes the same instants
  with no shared state, and no time zone applies.

Which instant fires (`due_instant`): the most recent instant `i` with
`lower < i <= now`, where `lower` is the later of the schedule's first registration in the
store and its last fire; none if there is no such instant. So a schedule never fires for an
instant before it was registered, and after any downtime only the most recent missed
instant fires (no storm). The store enforces "at most once per instant" (see
`rota.store.base.ScheduleStore`).

Pure: no I/O, no clock, no randomness. A time zone arrives as a `tzinfo` (loading it from
the time zone database is the caller's business: `rota.app.schedules.load_timezone`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo

from rota.core.jobs import MAX_JOB_NAME_LENGTH, NewJob, check_printable_name

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

# The shortest `every=` interval: a schedule is for periodic work, and anything faster is a
# loop, not a schedule (and would make the firing duty spin).
MIN_EVERY = timedelta(seconds=1)

# Cron aliases (as Vixie/Debian cron and croniter accept them), expanded before parsing.
CRON_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

# How the store's `rule` column spells an interval rule: "every 300s", "every 1.5s".
EVERY_PREFIX = "every "

# Steps `due_instant` walks forward from the lower bound before it searches back from
# `now` instead (a long downtime of a frequent schedule).
_WALK_LIMIT = 64
# Fold duplicates a cron iteration may yield before a later instant: a handful at most.
_MAX_SKIPS = 1000


def _cron_error(expression: str, problem: str) -> ValueError:
    aliases = ", ".join(CRON_ALIASES)
    return ValueError(
        f"bad cron text {expression!r}: {problem}. cron= takes 5 fields (minute hour "
        f"day-of-month month day-of-week, e.g. '0 3 * * *') or one of {aliases}"
    )


@dataclass(frozen=True, slots=True)
class CronRule:
    """Fire at the instants a 5-field cron expression matches, read in `timezone`.

    Build it with `CronRule.parse`. `tz` is the loaded time zone (not compared: the name
    is the identity)."""

    expression: str
    timezone: str = "UTC"
    tz: tzinfo = field(default=UTC, compare=False, repr=False)

    @classmethod
    def parse(cls, expression: object, timezone: str = "UTC", tz: tzinfo = UTC) -> CronRule:
        """A checked rule.

        Raises:
            TypeError: if `expression` is not a str.
            ValueError: naming what is wrong with the cron text.
        """
        if not isinstance(expression, str):
            raise TypeError(f"cron must be a str such as '0 3 * * *'; got {expression!r}")
        text = " ".join(expression.split())
        if not text:
            raise _cron_error(expression, "it is empty")
        if not text.isprintable():
            raise _cron_error(expression, "it holds control characters")
        if text.startswith("@") and text.lower() not in CRON_ALIASES:
            raise _cron_error(expression, f"{text!r} is not an alias rota knows")
        fields = _expanded(text).split()
        if len(fields) != 5:
            raise _cron_error(expression, f"it has {len(fields)} fields, not 5")
        try:
            from cronsim import CronSim, CronSimError
        except ModuleNotFoundError as error:  # a base dependency; only a broken install
            raise ModuleNotFoundError(
                "cron schedules need the package cronsim: pip install cronsim"
            ) from error
        try:
            CronSim(" ".join(fields), datetime(2000, 1, 1))
        except CronSimError as error:
            raise _cron_error(expression, str(error) or type(error).__name__) from None
        return cls(text, timezone, tz)

    @property
    def text(self) -> str:
        """The rule as the store's `rule` column and `rota schedules` show it."""
        return self.expression

    def next_after(self, after: datetime) -> datetime | None:
        """The first fire instant strictly after `after` (UTC); None if there is none
        within cronsim's horizon (50 years) or before the year 9999 ends."""
        from cronsim import CronSim

        try:
            iterator = CronSim(_expanded(self.expression), after.astimezone(self.tz))
            for _ in range(_MAX_SKIPS):
                # For fixed-time expressions cronsim works in naive local time, so after an
                # instant in the second pass of a repeated hour it may yield the first pass
                # (earlier in real time): that instant is skipped, which is the rule.
                moment = next(iterator).astimezone(UTC)
                if moment > after:
                    return moment
        except (StopIteration, OverflowError, ValueError):
            return None
        return None  # pragma: no cover - a cron iteration never repeats that often


def _expanded(text: str) -> str:
    return CRON_ALIASES.get(text.lower(), text)


@dataclass(frozen=True, slots=True)
class EveryRule:
    """Fire every `interval` of real time, at whole multiples of it since the Unix epoch."""

    interval: timedelta

    @classmethod
    def parse(cls, interval: timedelta) -> EveryRule:
        """A checked rule.

        Raises:
            ValueError: if `interval` is shorter than `MIN_EVERY` (1 second).
        """
        if interval < MIN_EVERY:
            raise ValueError(
                f"every= must be at least {MIN_EVERY.total_seconds():g} second; got "
                f"{interval.total_seconds():g} s (a schedule is for periodic work; run a "
                "loop in a job for anything faster)"
            )
        return cls(interval)

    @property
    def timezone(self) -> str:
        return "UTC"

    @property
    def text(self) -> str:
        """`every 300s`, `every 1.5s`: the store's `rule` column."""
        whole, micro = divmod(self._us, 1_000_000)
        return f"{EVERY_PREFIX}{whole}s" if not micro else f"{EVERY_PREFIX}{whole}.{micro:06d}s"

    @property
    def _us(self) -> int:
        return self.interval // _MICROSECOND

    def _instant(self, index: int) -> datetime | None:
        try:
            return EPOCH + timedelta(microseconds=index * self._us)
        except OverflowError:
            return None

    def next_after(self, after: datetime) -> datetime | None:
        """The first fire instant strictly after `after`; None past the year 9999."""
        return self._instant((after - EPOCH) // _MICROSECOND // self._us + 1)

    def latest_at_or_before(self, moment: datetime) -> datetime | None:
        return self._instant((moment - EPOCH) // _MICROSECOND // self._us)


ScheduleRule = CronRule | EveryRule


def parse_every_text(text: str) -> EveryRule | None:
    """The `EveryRule` of a stored rule text (`every 300s`); None if it is not one."""
    if not text.startswith(EVERY_PREFIX) or not text.endswith("s"):
        return None
    number = text[len(EVERY_PREFIX):-1]
    whole, _, fraction = number.partition(".")
    if not whole.isdigit() or (fraction and (not fraction.isdigit() or len(fraction) > 6)):
        return None
    return EveryRule(timedelta(seconds=int(whole), microseconds=int(fraction.ljust(6, "0") or 0)))


def due_instant(rule: ScheduleRule, lower: datetime, now: datetime) -> datetime | None:
    """The instant to fire at `now`: the most recent fire instant `i` of `rule` with
    `lower < i <= now`, or None. `lower` is the later of the schedule's registration and
    its last fire."""
    if now <= lower:
        return None
    if isinstance(rule, EveryRule):
        latest = rule.latest_at_or_before(now)
        return latest if latest is not None and latest > lower else None
    current = rule.next_after(lower)
    if current is None or current > now:
        return None
    for _ in range(_WALK_LIMIT):
        following = rule.next_after(current)
        if following is None or following > now:
            return current
        current = following
    # Many instants passed (a long downtime of a frequent schedule): look back from `now`
    # in doubling windows; the first window holding an instant holds the latest one.
    span = timedelta(minutes=1)
    while True:
        start = max(now - span, current)
        found = rule.next_after(start)
        if found is not None and found <= now:
            while (following := rule.next_after(found)) is not None and following <= now:
                found = following
            return found
        if start == current:  # pragma: no cover - `current` itself is an instant <= now
            return current
        span *= 2


def next_fire(rule: ScheduleRule, lower: datetime, now: datetime) -> datetime | None:
    """When the schedule fires next as seen at `now`: its due instant if one is waiting
    (workers were down, or have not looked yet), else its first instant after both
    `lower` and `now`."""
    due = due_instant(rule, lower, now)
    return due if due is not None else rule.next_after(max(lower, now))


def validate_schedule_name(name: object) -> str:
    """Return `name` if it is a valid schedule name: 1 to 200 printable characters, like a
    job name.

    Raises:
        TypeError: if it is not a str.
        ValueError: if it is empty, too long, or holds control characters.
    """
    if not isinstance(name, str):
        raise TypeError(f"a schedule name must be a str; got {name!r} ({type(name).__name__})")
    return check_printable_name(name, "a schedule name", MAX_JOB_NAME_LENGTH)


@dataclass(frozen=True, slots=True)
class Schedule:
    """A schedule as an App defines it: what to enqueue, and when.

    `definition` is a digest of everything that makes the schedule what it is (rule, time
    zone, job name, Queue, arguments): the store keeps the digest of the App that
    registered it last, and fires only for an App with the same one."""

    name: str
    rule: ScheduleRule
    job_name: str
    queue: str
    args_json: str = "[]"
    kwargs_json: str = "{}"

    @property
    def definition(self) -> str:
        text = json.dumps(
            [self.rule.text, self.rule.timezone, self.job_name, self.queue,
             self.args_json, self.kwargs_json],
            ensure_ascii=False, separators=(",", ":"),
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def new_job(self, fire_at: datetime) -> NewJob:
        """The job to enqueue for the instant `fire_at`: due at that instant."""
        return NewJob(name=self.job_name, queue=self.queue, due_at=fire_at,
                      args_json=self.args_json, kwargs_json=self.kwargs_json)

    def registration(self) -> ScheduleRegistration:
        return ScheduleRegistration(
            name=self.name, definition=self.definition, rule=self.rule.text,
            timezone=self.rule.timezone, job_name=self.job_name, queue=self.queue,
            args_json=self.args_json, kwargs_json=self.kwargs_json,
        )


@dataclass(frozen=True, slots=True)
class ScheduleRegistration:
    """What `ScheduleStore.register_schedules` (a schedule in code) or
    `ScheduleStore.set_stored_schedule` (one managed at run time) writes for one
    schedule."""

    name: str
    definition: str
    rule: str
    timezone: str
    job_name: str
    queue: str
    args_json: str = "[]"
    kwargs_json: str = "{}"


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    """A schedule as the store keeps it.

    `registered_at`: when it was first registered, or last resumed after a pause (it
    never fires for earlier instants); `updated_at`: when an App last registered it (or
    it was last set); `last_fire_at`: the last instant fired (None: never fired); the
    other fields are those of the App that registered it last. `stored`: a schedule
    managed at run time (`app.set_schedule`), fired by any worker whose App defines its
    job; False: a schedule in code, fired by the Apps that define it. `paused`: nothing
    fires it until it is resumed (instants passed while paused are skipped)."""

    name: str
    definition: str
    rule: str
    timezone: str
    job_name: str
    queue: str
    registered_at: datetime
    updated_at: datetime
    last_fire_at: datetime | None = None
    args_json: str = "[]"
    kwargs_json: str = "{}"
    paused: bool = False
    stored: bool = False

    @property
    def lower(self) -> datetime:
        """Fire instants must be after this: the later of registration and last fire."""
        if self.last_fire_at is None or self.last_fire_at < self.registered_at:
            return self.registered_at
        return self.last_fire_at


@dataclass(frozen=True, slots=True)
class FireOutcome:
    """What `ScheduleStore.fire_schedule` did.

    `job_id`: the job enqueued for the instant, or None if nothing was enqueued.
    `current`: False if the store holds another definition of the schedule (another App
    registered it since) or none at all; then this App does not fire it."""

    job_id: int | None
    current: bool = True

    @property
    def fired(self) -> bool:
        return self.job_id is not None


def code_schedule_clash(name: str) -> ValueError:
    """The error of a stored schedule named like a schedule in code."""
    return ValueError(
        f"a schedule named {name!r} is defined in code (app.schedule); a stored schedule "
        "cannot take its name: choose another name, or pause the code's schedule with "
        "pause_schedule"
    )


@dataclass(frozen=True, slots=True)
class ScheduleInfo:
    """One schedule as `app.list_schedules()` shows it: a schedule in the App's code or
    one stored at run time (`app.set_schedule`).

    `rule`: the rule's text (`0 3 * * *`, `every 300s`), read in `timezone`; `stored`:
    True for a schedule managed at run time; `paused`: nothing fires it until it is
    resumed; `next_fire_at`: the instant it fires next (None while paused, or if it never
    will); `last_fire_at`: the last instant fired (None: never)."""

    name: str
    job: str
    rule: str
    queue: str
    stored: bool
    paused: bool
    next_fire_at: datetime | None
    last_fire_at: datetime | None
    timezone: str = "UTC"
