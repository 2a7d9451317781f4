"""`rota jobs`: a read-only view of a store's jobs."""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from rota.cli.common import UsageError, add_store_options, opened_store
from rota.core.jobs import JobRecord, JobState


def register_jobs(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("jobs", help="list jobs, filtered by state and Queue",
                                   description="List jobs in id order.")
    add_store_options(parser, json_help="print JSON instead of a table")
    parser.add_argument("--state", choices=[s.value for s in JobState],
                        help="only jobs in this state")
    parser.add_argument("--queue", metavar="QUEUE", help="only jobs on this Queue")
    parser.add_argument("--limit", type=int, default=50, metavar="N",
                        help="at most N jobs (default 50)")
    parser.set_defaults(func=run_jobs)


def job_as_json(job: JobRecord) -> dict[str, object]:
    return {
        "id": job.id, "name": job.name, "queue": job.queue, "state": job.state.value,
        "attempt": job.attempt, "due_at": job.due_at.isoformat(), "args": list(job.args),
        "kwargs": job.kwargs, "last_error": job.last_error,
    }


def run_jobs(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise UsageError(f"--limit must be at least 1; got {args.limit}")
    with opened_store(args.store, args.app) as store:
        jobs = store.list_jobs(
            queue=args.queue, state=JobState(args.state) if args.state else None,
            limit=args.limit,
        )
    if args.json:
        print(json.dumps([job_as_json(job) for job in jobs], indent=2))
        return 0
    table = Table(title=f"{len(jobs)} job(s)")
    for column in ("id", "name", "Queue", "state", "attempt", "due at", "last error"):
        table.add_column(column)
    for job in jobs:
        table.add_row(str(job.id), job.name, job.queue, job.state.value, str(job.attempt),
                      job.due_at.isoformat(timespec="seconds"), job.last_error or "")
    Console(highlight=False).print(table)
    return 0
