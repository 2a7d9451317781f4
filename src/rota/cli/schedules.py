"""`rota schedules` (and `rota schedule list`, the same command): every schedule with its
rule, time zone, status, last fire and next fire.

With `--app`, the App's schedules (as its code defines them) joined with the store's rows:
the stored schedules (managed at run time), and rows of schedules in code the App does not
define (removed from the code, or another App's: they are inert for this App). With
`--store` alone, the store's rows as the App that registered each one last defines it (a
schedule in code) or as stored. A paused schedule's status is "paused". The store is
opened read-only.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from datetime import datetime

from rich.table import Table

from rota.app.schedules import rule_from_text
from rota.cli.common import CommandError, add_store_options, load_app, opened_store, store_now
from rota.cli.display import make_console, print_whole, user_text
from rota.core.schedules import ScheduleRow, ScheduleRule, next_fire
from rota.store.base import ScheduleStore

# What a schedule's line says about who fires it.
ACTIVE = "active"
NOT_REGISTERED = "not registered yet"  # no worker of this App has run since it was added
SUPERSEDED = "another App's definition"  # the store holds another definition: not fired
NOT_IN_APP = "not in this App"  # a row the App does not define: this App never fires it
IN_CODE = "in code"  # --store alone: a schedule in code, fired by the Apps that define it
STORED = "stored"  # a schedule managed at run time, fired by any App defining its job
PAUSED = "paused"  # nothing fires it until it is resumed


LIST_DESCRIPTION = (
    "Every schedule: its rule, time zone, job and Queue, its status (active, stored, "
    "paused, ...), when it last fired and when it fires next. With --app, the App's "
    "schedules in code joined with the store's rows (a row of a schedule in code the App "
    "does not define is never fired by it); the stored schedules (managed at run time) in "
    "both cases."
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "schedules", help="every schedule: rule, time zone, last fire, next fire (the same "
        "as `rota schedule list`)",
        description=LIST_DESCRIPTION + " The same command as `rota schedule list`.",
    )
    add_list_options(parser)


def add_list_options(parser: argparse.ArgumentParser) -> None:
    add_store_options(parser, json_help="print JSON instead of a table",
                      app_help="the App whose schedules to show (and its store)")
    parser.set_defaults(func=run)


@dataclass(frozen=True, slots=True)
class _Line:
    name: str
    rule: str
    timezone: str
    job: str
    queue: str
    status: str
    registered_at: datetime | None
    last_fire_at: datetime | None
    next_fire_at: datetime | None
    stored: bool = False
    paused: bool = False

    def as_json(self) -> dict[str, object]:
        def iso(moment: datetime | None) -> str | None:
            return None if moment is None else moment.isoformat()

        return {
            "name": self.name, "rule": self.rule, "timezone": self.timezone,
            "job": self.job, "queue": self.queue, "status": self.status,
            "registered_at": iso(self.registered_at), "last_fire_at": iso(self.last_fire_at),
            "next_fire_at": iso(self.next_fire_at), "stored": self.stored,
            "paused": self.paused,
        }


def _row_line(row: ScheduleRow, status: str, now: datetime,
              rule: ScheduleRule | None = None) -> _Line:
    if rule is None and status in (IN_CODE, STORED, SUPERSEDED):
        rule = rule_from_text(row.rule, row.timezone)
    upcoming = None if rule is None or row.paused else next_fire(rule, row.lower, now)
    return _Line(row.name, row.rule, row.timezone, row.job_name, row.queue,
                 PAUSED if row.paused else status, row.registered_at, row.last_fire_at,
                 upcoming, row.stored, row.paused)


def run(args: argparse.Namespace) -> int:
    with opened_store(args.store, args.app, read_only=True) as store:
        if not isinstance(store, ScheduleStore):
            raise CommandError(f"the store {store.url!r} does not keep schedules")
        rows = {row.name: row for row in store.list_schedules()}
        app = load_app(args.app, read_only=True) if args.app else None
        now = app.clock.now() if app is not None else store_now(store)
    lines: list[_Line] = []
    if app is None:
        lines = [_row_line(row, STORED if row.stored else IN_CODE, now)
                 for row in rows.values()]
    else:
        for name, schedule in sorted(app.schedules.items()):
            row = rows.pop(name, None)
            if row is None:
                lines.append(_Line(
                    name, schedule.rule.text, schedule.rule.timezone, schedule.job_name,
                    schedule.queue, NOT_REGISTERED, None, None,
                    schedule.rule.next_after(now)))
            elif row.definition != schedule.definition:
                lines.append(_row_line(row, SUPERSEDED, now))
            else:
                lines.append(_row_line(row, ACTIVE, now, schedule.rule))
        lines.extend(_row_line(row, STORED if row.stored else NOT_IN_APP, now)
                     for row in rows.values())
        lines.sort(key=lambda line: line.name)
    if args.json:
        print(json.dumps([line.as_json() for line in lines], indent=2, ensure_ascii=False))
        return 0
    console = make_console()
    if not lines:
        console.print("no schedules")
        return 0
    table = Table(title="Schedules")
    for column in ("schedule", "rule", "time zone", "job", "Queue", "status", "last fire",
                   "next fire"):
        table.add_column(column)
    for line in lines:
        table.add_row(
            user_text(line.name), user_text(line.rule), user_text(line.timezone),
            user_text(line.job), user_text(line.queue), line.status,
            _when(line.last_fire_at), _when(line.next_fire_at),
        )
    print_whole(console, table)
    return 0


def _when(moment: datetime | None) -> str:
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")
