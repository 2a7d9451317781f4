"""Schedules, the user's side: turning `app.schedule(...)` arguments into a checked
`rota.core.schedules.Schedule`, and a stored rule text back into a rule (for `rota
schedules --store`).

Every check happens here, before anything is stored: bad cron text, an unknown time zone,
both or neither of `cron`/`every`, arguments that are not JSON or do not fit the handler.
Time zones are loaded here (reading the time zone database is I/O, which the pure core does
not do).
"""

from __future__ import annotations

import inspect
import zoneinfo
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, tzinfo
from functools import cache

from rota.core.durations import to_timedelta
from rota.core.jobs import check_new_jobs, encode_arguments
from rota.core.queues import validate_queue_name
from rota.core.schedules import (
    EPOCH,
    CronRule,
    EveryRule,
    Schedule,
    ScheduleRule,
    parse_every_text,
    validate_schedule_name,
)


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

