"""`rota job ID`: one job, every field."""

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
        description="Show one job: its state, attempts, times, arguments, result and last "
        "error. Exit 1 if there is no such job.",
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
    fields = job_as_json(job)
    if args.json:
        print(json.dumps(fields, indent=2, ensure_ascii=False))
        return 0
    table = Table(title=f"job {job.id}", show_header=False)  # every cell: user_text
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for name, value in fields.items():
        if isinstance(value, list | dict) or (name == "result" and value is not None):
            text = json.dumps(value, ensure_ascii=False)
        else:
            text = "" if value is None else str(value)
        table.add_row(name, user_text(text))
    make_console().print(table)
    return 0
