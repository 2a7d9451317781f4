"""The App's schedules: defining them (`App.schedule`), checking them, and firing them
inline.

`AppSchedules` holds an App's schedules by name. `define` checks everything before it
keeps a schedule, in the order a user meets the mistakes: the name, the job (one of this
App's), the rule, the arguments (JSON, within the payload limit, fitting the handler),
a name already used, and a store that keeps no schedules; nothing is stored then.
`set_stored` makes the same checks for a schedule managed at run time (`app.set_schedule`),
refusing a name of a schedule in the App's code, and stores it; `remove_stored`,
`set_paused` and `infos` are `app.remove_schedule`, `pause_schedule`/`resume_schedule` and
`list_schedules`. `stored_schedule` turns a stored row into a schedule a worker fires.
`build_schedule` turns `app.schedule(...)` arguments into a checked
`rota.core.schedules.Schedule`; `rule_from_text` a stored rule text back into a rule (for
`rota schedules --store`). Time zones are loaded here (reading the time zone database is
I/O, which the pure core does not do). Workers fire schedules through their duty
(rota.worker.schedules, `duty`); `run_until_idle()` fires them inline (`fire_inline`),
registering each schedule in the store the first time it runs with it.
Imports the core, the store contract, the job definitions and the worker's schedule duty.
"""

from __future__ import annotations

import inspect
import zoneinfo
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, tzinfo
from functools import cache
from typing import Any

from rota.app.definition import JobDefinition
from rota.core.clock import Clock
from rota.core.durations import Duration, to_timedelta
from rota.core.jobs import check_new_jobs, encode_arguments
from rota.core.queues import validate_queue_name
from rota.core.schedules import (
    EPOCH,
    CronRule,
    EveryRule,
    Schedule,
    ScheduleInfo,
    ScheduleRow,
    ScheduleRule,
    code_schedule_clash,
    next_fire,
    parse_every_text,
    validate_schedule_name,
)
from rota.store.base import ScheduleStore, Store
from rota.worker.schedules import ScheduleDuty, Skips, fire_due_now


def load_timezone(name: object) -> tzinfo:
    """The time zone named `name` (an IANA name such as `Europe/Berlin`, or `UTC`).

    Raises:
        TypeError: if `name` is not a str.
        ValueError: naming the time zone when the database has no such zone.
    """
    if not isinstance(name, str):
        raise TypeError(f"timezone must be a str such as 'Europe/Berlin'; got {name!r}")
    return _load_timezone(name)


@cache
def _load_timezone(name: str) -> tzinfo:
    if name == "UTC":
        return UTC  # no time zone database needed
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"unknown time zone {name!r}: give an IANA name such as 'Europe/Berlin' or "
            "'America/New_York' (or 'UTC'). If every name fails, this machine has no time "
            "zone database: pip install tzdata"
        ) from None


def build_rule(cron: object, every: object, timezone: object) -> ScheduleRule:
    """The rule of `app.schedule(cron=..., every=..., timezone=...)`.

    Raises:
        ValueError: both or neither of `cron`/`every`, bad cron text, an unknown time zone,
            an interval under a second, or a time zone with `every` (an interval of real
            time has none).
        TypeError: an argument of the wrong type.
    """
    if (cron is None) == (every is None):
        raise ValueError(
            "give a schedule exactly one rule: cron='0 3 * * *' (a cron expression) or "
            f"every=timedelta(minutes=5) (an interval); got {'both' if cron else 'neither'}"
        )
    if every is not None:
        if timezone != "UTC":
            raise ValueError(
                f"timezone={timezone!r} does not apply to every=: an interval is real time, "
                "anchored at 1970-01-01T00:00Z. For local times of day use cron= with "
                "timezone="
            )
        return EveryRule.parse(to_timedelta(every, "every"))
    tz = load_timezone(timezone)
    assert isinstance(timezone, str)  # load_timezone checked it
    return CronRule.parse(cron, timezone, tz)


def rule_from_text(rule: str, timezone: str) -> ScheduleRule | None:
    """The rule a store row names (`0 3 * * *` in `timezone`, or `every 300s`); None if
    this rota cannot read it (an unknown time zone here, text from a newer rota)."""
    every = parse_every_text(rule)
    if every is not None:
        return every
    try:
        return CronRule.parse(rule, timezone, load_timezone(timezone))
    except (ValueError, TypeError):
        return None


def check_arguments_fit(func: Callable[..., object], job_name: str,
                        args: Sequence[object], kwargs: Mapping[str, object]) -> None:
    """Raise `TypeError` if `args`/`kwargs` cannot be passed to the handler `func`.

    Handlers whose signature cannot be read (some builtins) are not checked."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(
            f"the schedule's arguments do not fit job {job_name!r}{signature}: {error}"
        ) from None


def build_schedule(
    name: object, job_name: str, queue: str, rule: ScheduleRule,
    args: Sequence[object], kwargs: Mapping[str, object], max_payload_bytes: int,
) -> Schedule:
    """A checked `Schedule`: its name, Queue and arguments pass the rules of enqueue.

    Raises:
        ValueError, TypeError: naming what is wrong (see `app.schedule`).
    """
    checked_name = validate_schedule_name(name)
    validate_queue_name(queue)
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise TypeError(f"args must be a tuple or list of arguments; got {args!r}")
    if not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a dict of keyword arguments; got {kwargs!r}")
    args_json, kwargs_json = encode_arguments(tuple(args), dict(kwargs), max_payload_bytes)
    schedule = Schedule(checked_name, rule, job_name, queue, args_json, kwargs_json)
    check_new_jobs([schedule.new_job(EPOCH)])  # the checks every enqueue path makes
    return schedule


def schedule_store(store: Store) -> ScheduleStore:
    """`store` as a ScheduleStore, or a TypeError saying it keeps no schedules."""
    if not isinstance(store, ScheduleStore):
        raise TypeError(
            f"the store {store.url!r} does not keep schedules (it lacks "
            "register_schedules, fire_schedule and list_schedules); use a memory://, "
            "sqlite:/// or postgresql:// store"
        )
    return store


def scheduled_job(job: object, definitions: Mapping[str, JobDefinition[Any, Any]],
                  owner: object) -> JobDefinition[Any, Any]:
    """The definition `job` names (a definition or its name), if it is one of `owner`'s."""
    if isinstance(job, str):
        found = definitions.get(job)
        if found is None:
            raise ValueError(
                f"no job named {job!r} in this App; register it with @app.job first"
            )
        return found
    if isinstance(job, JobDefinition):
        if job.app is not owner or definitions.get(job.name) is not job:
            raise ValueError(
                f"job {job.name!r} belongs to another App; schedule this App's jobs"
            )
        return job
    raise TypeError(
        f"schedule() takes a job defined with @app.job (or its name); got {job!r}"
    )


# Stored schedules kept parsed (`AppSchedules._from_row`) before the cache starts over.
MAX_KEPT_STORED = 100_000


def stored_schedule(row: ScheduleRow,
                    definitions: Mapping[str, JobDefinition[Any, Any]]) -> Schedule | str:
    """A stored row as a schedule this App fires, or why it cannot fire it (its job is not
    one of this App's, or its rule cannot be read here)."""
    if row.job_name not in definitions:
        return (f"its job {row.job_name!r} is not defined in this worker's App; workers "
                "whose App defines it fire it (deploy that code here, or remove the "
                "schedule)")
    rule = rule_from_text(row.rule, row.timezone)
    if rule is None:
        return (f"its rule {row.rule!r} in time zone {row.timezone!r} cannot be read by "
                "this rota (a time zone unknown here, or a newer rota's rule)")
    return Schedule(row.name, rule, row.job_name, row.queue, row.args_json, row.kwargs_json)


def row_info(row: ScheduleRow, now: datetime) -> ScheduleInfo:
    """A store row as `ScheduleInfo` (its next fire from the row's own rule text; None
    while paused, or if this rota cannot read the rule)."""
    rule = rule_from_text(row.rule, row.timezone)
    return ScheduleInfo(
        row.name, row.job_name, row.rule, row.queue, stored=row.stored, paused=row.paused,
        next_fire_at=None if row.paused or rule is None else next_fire(rule, row.lower, now),
        last_fire_at=row.last_fire_at, timezone=row.timezone,
    )


class AppSchedules:
    """One App's schedules (see the module docstring): those in its code, by name, and
    the stored ones, which live in the store only."""

    def __init__(self, definitions: Mapping[str, JobDefinition[Any, Any]]) -> None:
        self.by_name: dict[str, Schedule] = {}
        self._definitions = definitions  # the App's, as jobs are defined
        self._registered: set[str] = set()  # by run_until_idle (workers: the duty)
        self._skips = Skips()  # run_until_idle's
        self._stored: dict[tuple[str, str], Schedule] = {}  # by name and definition

    def _checked(
        self, name: str, job: JobDefinition[Any, Any] | str, *, owner: object,
        max_payload_bytes: int, cron: str | None, every: Duration | None, timezone: str,
        args: Sequence[Any], kwargs: Mapping[str, Any] | None, queue: str | None,
    ) -> tuple[Schedule, JobDefinition[Any, Any]]:
        validate_schedule_name(name)
        definition = scheduled_job(job, self._definitions, owner)
        rule = build_rule(cron, every, timezone)
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if definition.typed is not None and isinstance(args, Sequence) and \
                isinstance(kwargs, Mapping):  # dataclass / pydantic parameters, as JSON
            check_arguments_fit(definition.func, definition.name, args, kwargs)
            args, kwargs = definition.typed.to_json(args, kwargs)
        schedule = build_schedule(
            name, definition.name, definition.queue if queue is None else queue, rule,
            args, kwargs, max_payload_bytes,
        )
        return schedule, definition

    def define(
        self, name: str, job: JobDefinition[Any, Any] | str, *, owner: object, store: Store,
        max_payload_bytes: int, cron: str | None, every: Duration | None, timezone: str,
        args: Sequence[Any], kwargs: Mapping[str, Any] | None, queue: str | None,
    ) -> Schedule:
        """Check and keep a schedule (`App.schedule`, which documents the arguments)."""
        schedule, definition = self._checked(
            name, job, owner=owner, max_payload_bytes=max_payload_bytes, cron=cron,
            every=every, timezone=timezone, args=args, kwargs=kwargs, queue=queue)
        if schedule.name in self.by_name:
            raise ValueError(
                f"a schedule named {schedule.name!r} already exists in this App; give each "
                "schedule its own name"
            )
        _check_fit(definition, args, kwargs)
        schedule_store(store)  # a store without schedules fails here, not in a worker
        self.by_name[schedule.name] = schedule
        return schedule

    def set_stored(
        self, name: str, job: JobDefinition[Any, Any] | str, *, owner: object, store: Store,
        now: datetime, max_payload_bytes: int, cron: str | None, every: Duration | None,
        timezone: str, args: Sequence[Any], kwargs: Mapping[str, Any] | None,
        queue: str | None,
    ) -> None:
        """Check and store a schedule managed at run time (`App.set_schedule`)."""
        schedule, definition = self._checked(
            name, job, owner=owner, max_payload_bytes=max_payload_bytes, cron=cron,
            every=every, timezone=timezone, args=args, kwargs=kwargs, queue=queue)
        if schedule.name in self.by_name:
            raise code_schedule_clash(schedule.name)
        _check_fit(definition, args, kwargs)
        schedule_store(store).set_stored_schedule(schedule.registration(), now)

    def remove_stored(self, name: str, store: Store) -> None:
        """Delete a stored schedule (`App.remove_schedule`)."""
        validate_schedule_name(name)
        if name in self.by_name:
            raise ValueError(
                f"the schedule {name!r} is defined in this App's code (app.schedule): "
                "remove it from the code; pause_schedule stops it at once"
            )
        if not schedule_store(store).delete_stored_schedule(name):
            raise KeyError(
                f"no stored schedule named {name!r}; list_schedules() (or `rota schedule "
                "list`) lists them"
            )

    def set_paused(self, name: str, paused: bool, store: Store, now: datetime) -> None:
        """Pause or resume a schedule, stored or in code (`App.pause_schedule`)."""
        validate_schedule_name(name)
        schedules_store = schedule_store(store)
        if schedules_store.set_schedule_paused(name, paused, now):
            return
        in_code = self.by_name.get(name)
        if in_code is not None:  # no worker has registered it yet: register it now
            schedules_store.register_schedules([in_code.registration()], now)
            if schedules_store.set_schedule_paused(name, paused, now):
                return
        raise KeyError(
            f"no schedule named {name!r}, in this App's code or stored; list_schedules() "
            "(or `rota schedule list`) lists them"
        )

    def infos(self, store: Store, now: datetime) -> list[ScheduleInfo]:
        """Every schedule of the App's code and every stored one, by name
        (`App.list_schedules`)."""
        rows = {row.name: row for row in schedule_store(store).list_schedules()}
        infos: list[ScheduleInfo] = []
        for name, schedule in self.by_name.items():
            row = rows.get(name)
            rule = schedule.rule
            if row is None:  # not registered yet: it fires after its first registration
                upcoming = rule.next_after(now)
            else:
                upcoming = None if row.paused else next_fire(rule, row.lower, now)
            infos.append(ScheduleInfo(
                name, schedule.job_name, rule.text, schedule.queue, stored=False,
                paused=row is not None and row.paused, next_fire_at=upcoming,
                last_fire_at=None if row is None else row.last_fire_at,
                timezone=rule.timezone,
            ))
        infos.extend(row_info(row, now) for row in rows.values()
                     if row.stored and row.name not in self.by_name)
        return sorted(infos, key=lambda info: info.name)

    def _from_row(self, row: ScheduleRow) -> Schedule | str:
        """`stored_schedule`, kept per row definition once it succeeds (its rule parsed
        once, not at every step of the duty)."""
        key = (row.name, row.definition)
        found = self._stored.get(key)
        if found is None:
            made = stored_schedule(row, self._definitions)
            if isinstance(made, str):
                return made  # the job may be defined later: asked again
            if len(self._stored) >= MAX_KEPT_STORED:
                self._stored.clear()
            found = self._stored[key] = made
        return found

    def duty(self, store: Store, clock: Clock) -> ScheduleDuty | None:
        """The duty that fires the schedules (in code and stored) in a worker; None for a
        store that keeps no schedules, when the App defines none."""
        if not self.by_name and not isinstance(store, ScheduleStore):
            return None
        return ScheduleDuty(list(self.by_name.values()), schedule_store(store), clock,
                            self._from_row)

    def fire_inline(self, store: Store, clock: Clock) -> Iterable[str]:
        """`run_until_idle`: register (each schedule in code once per App), then fire what
        is due at the clock's time, stored schedules too. Returns the Queues of the jobs
        enqueued, due at their instants, so that the passes that follow run them."""
        if not self.by_name and not isinstance(store, ScheduleStore):
            return ()
        schedules_store = schedule_store(store)
        schedules = list(self.by_name.values())
        new = [s for s in schedules if s.name not in self._registered]
        if new:
            schedules_store.register_schedules([s.registration() for s in new], clock.now())
            self._registered.update(s.name for s in new)
        fired = fire_due_now(schedules_store, schedules, clock.now(), self._from_row,
                             self._skips)
        return [s.queue for s, outcome in fired if outcome.fired]


def _check_fit(definition: JobDefinition[Any, Any], args: Sequence[Any] | None,
               kwargs: Mapping[str, Any] | None) -> None:
    args = () if args is None else args
    kwargs = {} if kwargs is None else kwargs
    if isinstance(args, Sequence) and isinstance(kwargs, Mapping):
        check_arguments_fit(definition.func, definition.name, args, kwargs)
