"""`rota job ID`: one job, every field, how long its last attempt ran, and its place in a
workflow (its parents and children, each with its name and state)."""

from __future__ import annotations

import argparse
import json

from rich.table import Table

from rota.cli.common import (
    CommandError,
    add_store_options,
    job_id_arg,
    opened_store,
    whole_number,
)
from rota.cli.display import make_console, user_text
from rota.cli.inspect_store import job_as_json
from rota.core.jobs import JobRecord
from rota.core.plurals import counted
from rota.core.progress import progress_text
from rota.store import related

# Parents and children shown by default: a fan-in of 10,000 parents stays one screen.
RELATED_SHOWN = 20
related_arg = whole_number(0, 1_000_000)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "job", help="show one job, every field, and its parents and children",
        description="Show one job: its state, attempts, times (finished_at, and the "
        "duration of its last attempt where known), arguments, result, the worker that ran "
        "its last attempt (the id `rota workers` lists), its progress (what its handler "
        "last reported with set_progress: done/total (percent) message), every failed "
        "attempt kept (the last 20, one a line: attempt, when, worker, error; --json adds "
        "their tracebacks), its last error and the traceback of its last failed attempt. "
        "For a job of a workflow, what it waits for (after outcome), its parents (the "
        "jobs it was enqueued after, in the order given) and its children (the jobs "
        "enqueued after it), each with its id, name and state: the first --related of "
        "each, and how many more there are. For a waiting job, how many of its parents "
        "have not finished yet, and those parents first. Exit 1 if there is no such job.",
    )
    parser.add_argument("id", type=job_id_arg, metavar="ID", help="the job id")
    parser.add_argument("--related", type=related_arg, default=RELATED_SHOWN, metavar="N",
                        help=f"show at most N parents and N children (default "
                        f"{RELATED_SHOWN}; 0 shows only how many there are); --json lists "
                        "the same ones")
    add_store_options(parser, json_help="print JSON instead of a table (parents and "
                      "children as lists of id, name and state, with parents_total, "
                      "children_total and waiting_for)")
    parser.set_defaults(func=run)


NOUNS = {"parents": ("parent", "parents"), "children": ("child", "children")}
# What a job with parents waits for, by its after_outcome.
AFTER_OUTCOME_WORDS = {"succeeded": "runs once every parent succeeded",
                       "finished": "runs once every parent finished"}


def _errors(job: JobRecord) -> str:
    """Every failed attempt kept, one a line, oldest first: attempt, when, which worker,
    the error (the last one's traceback is the next field)."""
    return "\n".join(
        f"#{error.attempt}  {error.at.isoformat(timespec='seconds')}  "
        f"{error.worker or '-'}  {error.error}" for error in job.errors)


def _listing(listed: object, total: object, singular: str, plural: str) -> str:
    """Parents or children, one a line: id, state, name; then how many are not shown."""
    assert isinstance(listed, list) and isinstance(total, int)
    if not total:
        return ""
    width = max([len(str(one["id"])) for one in listed], default=0)
    states = [one["state"] or "(deleted)" for one in listed]
    state_width = max(map(len, states), default=0)
    lines = [counted(total, singular, plural) + (":" if listed else "")]
    for one, state in zip(listed, states, strict=True):
        lines.append(f"{one['id']:>{width}}  {state:<{state_width}}  {one['name'] or ''}"
                     .rstrip())
    if listed and total > len(listed):
        lines.append(f"... and {total - len(listed)} more")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    with opened_store(args.store, args.app, read_only=True) as store:
        job = store.get_job(args.id)
        if job is None:
            raise CommandError(f"no job {args.id} in {store.url}")
        workflow = related(store, job, args.related).as_json()
    duration = job.last_attempt_duration
    fields: dict[str, object] = {}
    for name, value in job_as_json(job).items():
        if name == "last_traceback":  # the traceback stays last
            fields.update(workflow)
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
        if name in {"parents_total", "children_total"}:
            continue  # in the lines of parents and children
        if name == "waiting_for":
            if value is None:
                continue
            name = "waiting for"
            text = f"{value} of {counted(len(job.parents), 'parent')}, not finished yet"
        elif name == "after_outcome":
            name = "after outcome"
            words = AFTER_OUTCOME_WORDS.get(str(value))
            text = str(value) if words is None else f"{value}: {words}"
        elif name == "progress":
            text = progress_text(job.progress)
        elif name == "errors":
            name = "failed attempts"
            text = _errors(job)
        elif name in {"parents", "children"}:
            text = _listing(value, fields[f"{name}_total"], *NOUNS[name])
        elif isinstance(value, list | dict) or (name == "result" and value is not None):
            text = json.dumps(value, ensure_ascii=False)
        elif name == "duration_s":
            name, text = "duration", "" if value is None else f"{value:g} s"
        else:
            text = "" if value is None else str(value)
        table.add_row(name, user_text(text))
    make_console().print(table)
    return 0
