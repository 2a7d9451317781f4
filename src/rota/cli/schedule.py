"""`rota schedule`: manage schedules at run time, beside those in code.

`rota schedule list` is `rota schedules` (rota.cli.schedules). `rota schedule add` stores a
schedule (`App.set_schedule`): it needs `--app`, whose job definitions check the job name
and the arguments. `pause`, `resume` and `remove` take `--app` or `--store`: with
`--store` alone they act on the store's rows, so a schedule in code must have been
registered by a worker first (with `--app`, pausing registers it).
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timedelta
from typing import Any

from rota.cli.common import (
    CommandError,
    UsageError,
    add_store_options,
    load_app,
    opened_store,
    store_now,
)
from rota.cli.purge import parse_duration
from rota.cli.schedules import LIST_DESCRIPTION, add_list_options
from rota.core.schedules import ScheduleInfo, validate_schedule_name
from rota.store.base import ScheduleStore, Store


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "schedule", help="list, add, pause, resume or remove schedules while workers run",
        description="Manage schedules at run time, beside those in code: every worker "
        "picks a change up at its next poll, without a restart. `rota schedule list` is "
        "`rota schedules`.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="every schedule (as `rota schedules`)",
                                 description=LIST_DESCRIPTION)
    add_list_options(listing)

    add = actions.add_parser(
        "add", help="store a schedule (replacing the stored one of that name)",
        description="Store a schedule managed at run time, or replace the stored one of "
        "that name (its last fire and pause are kept). Any worker whose App defines JOB "
        "fires it, once per instant, from its next poll on. Needs --app: the App's job "
        "definitions check JOB and the arguments. A name of a schedule in the App's code "
        "is refused.",
        epilog="examples: rota schedule add nightly-acme build_report --cron '0 3 * * *' "
        "--timezone Europe/Berlin --args '[\"acme\"]' --app myproject.tasks:app; "
        "rota schedule add sync sync_all --every 5m --app myproject.tasks:app",
    )
    add.add_argument("name", metavar="NAME", help="the schedule's name")
    add.add_argument("job", metavar="JOB", help="the name of a job the App defines")
    rule = add.add_mutually_exclusive_group(required=True)
    rule.add_argument("--cron", metavar="TEXT",
                      help="a 5-field cron expression ('0 3 * * *') or an alias (@daily)")
    rule.add_argument("--every", metavar="DURATION",
                      help="an interval: 30s, 15m, 12h, 7d (at least 1 s)")
    add.add_argument("--timezone", metavar="TZ", default="UTC",
                     help="an IANA time zone for --cron (default UTC)")
    add.add_argument("--queue", metavar="Q", help="the Queue (default: the job's own)")
    add.add_argument("--args", metavar="JSON", default="[]",
                     help="the job's positional arguments, a JSON array: '[\"acme\", 3]'")
    add.add_argument("--kwargs", metavar="JSON", default="{}",
                     help="the job's keyword arguments, a JSON object: '{\"fmt\": \"pdf\"}'")
    add_store_options(add, json_help="print the stored schedule as JSON",
                      app_help="the App whose job to schedule (required)")
    add.set_defaults(func=run_add)

    for action, help_text in (
        ("pause", "pause a schedule (stored or in code): nothing fires it until resumed"),
        ("resume", "resume a paused schedule at its next instant (missed ones skipped)"),
        ("remove", "delete a stored schedule (one in code is removed from the code)"),
    ):
        sub = actions.add_parser(action, help=help_text, description=help_text[0].upper()
                                 + help_text[1:] + ". Takes effect at every worker's next "
                                 "poll.")
        sub.add_argument("name", metavar="NAME", help="the schedule's name")
        add_store_options(sub, json_help="print the outcome as JSON")
        sub.set_defaults(func=run_change, action=action)


def _json_arg(text: str, option: str, kind: type) -> Any:
    try:
        value = json.loads(text)
    except ValueError as error:
        example = "'[\"acme\", 3]'" if kind is list else "'{\"fmt\": \"pdf\"}'"
        raise UsageError(f"{option} must be JSON ({error}); e.g. {example}") from None
    if not isinstance(value, kind):
        raise UsageError(f"{option} must be a JSON {'array' if kind is list else 'object'}; "
                         f"got {text!r}")
    return value


def _every(text: str) -> timedelta:
    stripped = text.strip()
    try:
        return parse_duration(stripped + "s" if stripped.replace(".", "", 1).isdigit()
                              else stripped)
    except ValueError as error:
        raise UsageError(f"--every: {error}") from None


def run_add(args: argparse.Namespace) -> int:
    if not args.app:
        raise UsageError(
            "rota schedule add needs --app MODULE:ATTR: the App's job definitions check the "
            "job name and its arguments (--store alone cannot)")
    if args.store:
        raise UsageError("give --store or --app, not both")
    positional = _json_arg(args.args, "--args", list)
    keywords = _json_arg(args.kwargs, "--kwargs", dict)
    every = None if args.every is None else _every(args.every)
    app = load_app(args.app)
    with opened_store(None, args.app):
        try:
            app.set_schedule(args.name, args.job, cron=args.cron, every=every,
                             timezone=args.timezone, args=positional, kwargs=keywords,
                             queue=args.queue)
        except (ValueError, TypeError) as error:
            raise CommandError(str(error)) from None
        info = next(i for i in app.list_schedules() if i.name == args.name)
    if args.json:
        print(json.dumps(_info_json(info), indent=2, ensure_ascii=False))
    else:
        print(f"stored schedule {args.name!r}: workers fire it from their next poll")
    return 0


def _info_json(info: ScheduleInfo) -> dict[str, object]:
    def iso(moment: datetime | None) -> str | None:
        return None if moment is None else moment.isoformat()

    return {"name": info.name, "job": info.job, "rule": info.rule,
            "timezone": info.timezone, "queue": info.queue, "stored": info.stored,
            "paused": info.paused, "next_fire_at": iso(info.next_fire_at),
            "last_fire_at": iso(info.last_fire_at)}


def run_change(args: argparse.Namespace) -> int:
    action: str = args.action
    try:
        name = validate_schedule_name(args.name)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.app:
        app = load_app(args.app)
        with opened_store(args.store, args.app):
            try:
                {"pause": app.pause_schedule, "resume": app.resume_schedule,
                 "remove": app.remove_schedule}[action](name)
            except KeyError as error:
                raise CommandError(str(error.args[0])) from None
            except ValueError as error:
                raise CommandError(str(error)) from None
    else:
        with opened_store(args.store, None) as store:
            _change_rows(_schedule_store(store), store, name, action)
    done = {"pause": "paused", "resume": "resumed", "remove": "removed"}[action]
    if args.json:
        print(json.dumps({"name": name, done: True}, ensure_ascii=False))
    else:
        print(f"{done} schedule {name!r}: workers see it at their next poll")
    return 0


def _schedule_store(store: Store) -> ScheduleStore:
    if not isinstance(store, ScheduleStore):
        raise CommandError(f"the store {store.url!r} does not keep schedules")
    return store


def _change_rows(schedules: ScheduleStore, store: Store, name: str, action: str) -> None:
    """pause, resume or remove with --store alone: on the store's rows."""
    if action == "remove":
        if schedules.delete_stored_schedule(name):
            return
        if any(row.name == name for row in schedules.list_schedules()):
            raise CommandError(f"the schedule {name!r} is defined in code (app.schedule): "
                               "remove it from the code; `rota schedule pause` stops it now")
        raise CommandError(f"no stored schedule named {name!r}; `rota schedule list` lists "
                           "them")
    if not schedules.set_schedule_paused(name, action == "pause", store_now(store)):
        raise CommandError(
            f"no schedule named {name!r} in the store; `rota schedule list` lists them (a "
            "schedule in code is stored when its first worker starts: pass --app to pause "
            "it before)")
