"""`rota job ID`: one job, every field, and how long its last attempt ran."""

from __future__ import annotations

import argparse
import json

from rich.table import Table

from rota.cli.common import CommandError, add_store_options, job_id_arg, opened_store
from rota.cli.display import make_console, user_text
from rota.cli.inspect_store import job_as_json


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "job", help="show one job, every field",
        description="Show one job: its state, attempts, times (finished_at, and the "
        "duration of its last attempt where known), arguments, result, last error and the "
        "traceback of its last failed attempt. Exit 1 if there is no such job.",
    )
    parser.add_argument("id", type=job_id_arg, metavar="ID", help="the job id")
    add_store_options(parser, json_help="print JSON instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with opened_store(args.store, args.app, read_only=True) as store:
        job = store.get_job(args.id)
        where = store.url
    if job is None:
        raise CommandError(f"no job {args.id} in {where}")
    duration = job.last_attempt_duration
    fields: dict[str, object] = {}
    for name, value in job_as_json(job).items():
        fields[name] = value
        if name == "finished_at":  # beside the times it is measured between
            fields["duration_s"] = None if duration is None else duration.total_seconds()
    if args.json:
        print(json.dumps(fields, indent=2, ensure_ascii=False))
        return 0
    table = Table(title=f"job {job.id}", show_header=False)  # every cell: user_text
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for name, value in fields.items():
        if isinstance(value, list | dict) or (name == "result" and value is not None):
            text = json.dumps(value, ensure_ascii=False)
        elif name == "duration_s":
            name, text = "duration", "" if value is None else f"{value:g} s"
        else:
            text = "" if value is None else str(value)
        table.add_row(name, user_text(text))
    make_console().print(table)
    return 0
