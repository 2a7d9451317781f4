"""`rota jobs`: a read-only view of a store's jobs."""

from __future__ import annotations

import argparse
import json
from datetime import datetime

from rich.table import Table

from rota.cli.common import (
    UsageError,
    add_meta_option,
    add_store_options,
    limit_arg,
    meta_arg,
    offset_arg,
    opened_store,
)
from rota.cli.display import make_console, print_whole, user_text
from rota.core.jobs import JobRecord, JobState
from rota.core.plurals import counted
from rota.core.progress import attempt_error_fields, progress_fields, progress_text


def register_jobs(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "jobs", help="list jobs, filtered by state, Queue, job name and meta",
        description="List jobs in id order (oldest first; --newest for newest first; "
        "--newest with a finished --state: the most recently finished first), a page at "
        "a time: --limit N jobs after skipping --offset M. --meta KEY=VALUE (repeatable) "
        "keeps the jobs whose meta holds each KEY with that value, VALUE read as JSON "
        "when it is JSON (order=42 is the number; order='\"42\"' the text), else as text "
        "(tenant=acme); with --meta, jobs come by id only and --offset is not taken. A "
        "progress column (done/total (percent) message) appears when a listed job "
        "reported progress.")
    add_store_options(parser, json_help="print JSON instead of a table")
    parser.add_argument("--state", choices=[s.value for s in JobState],
                        help="only jobs in this state (waiting: workflow jobs whose "
                        "parents have not all finished)")
    parser.add_argument("--queue", metavar="QUEUE", help="only jobs on this Queue")
    parser.add_argument("--name", metavar="NAME", help="only jobs with this job name")
    add_meta_option(parser)
    parser.add_argument("--limit", type=limit_arg, default=50, metavar="N",
                        help="at most N jobs (default 50)")
    parser.add_argument("--newest", action="store_true",
                        help="newest jobs first (with a finished --state: latest finished "
                        "first)")
    parser.add_argument("--offset", type=offset_arg, default=0, metavar="M",
                        help="skip the first M matching jobs (paging; default 0)")
    parser.set_defaults(func=run_jobs)


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def job_as_json(job: JobRecord) -> dict[str, object]:
    """Every field of a job record, JSON-ready (times as ISO 8601 text, None as null), the
    failed attempts and the traceback last."""
    return {
        "id": job.id, "name": job.name, "queue": job.queue, "state": job.state.value,
        "attempt": job.attempt, "due_at": job.due_at.isoformat(), "args": list(job.args),
        "kwargs": job.kwargs, "last_error": job.last_error,
        "created_at": _time(job.created_at), "started_at": _time(job.started_at),
        "finished_at": _time(job.finished_at),
        "result": job.result, "cancel_requested": job.cancel_requested,
        "lease_owner": job.lease_owner, "lease_expires_at": _time(job.lease_expires_at),
        "worker": job.worker,
        "progress": None if job.progress is None else progress_fields(job.progress),
        **({"arguments_error": job.arguments_error} if job.arguments_error else {}),
        **({"key": job.key} if job.key is not None else {}),
        **({"meta": job.meta} if job.meta else {}),
        **({"snoozes": job.snoozes} if job.snoozes else {}),
        **({"expires_at": _time(job.expires_at)} if job.expires_at is not None else {}),
        **({"after_outcome": job.after_outcome} if job.after_outcome is not None else {}),
        # Last: they may run to 16 KiB of lines each, the rest should not scroll away.
        "errors": [attempt_error_fields(error) for error in job.errors],
        "last_traceback": job.last_traceback,
    }


def run_jobs(args: argparse.Namespace) -> int:
    meta = meta_arg(args.meta)
    if meta is not None and args.offset:
        raise UsageError("--offset does not combine with --meta: narrow the filters "
                         "(--state, --queue, --name) or raise --limit instead")
    state = JobState(args.state) if args.state else None
    with opened_store(args.store, args.app, read_only=True) as store:
        if meta is not None:
            jobs = store.find_jobs(queue=args.queue, state=state, name=args.name, meta=meta,
                                   limit=args.limit, newest=args.newest)
        else:
            jobs = store.list_jobs(queue=args.queue, state=state, limit=args.limit,
                                   newest=args.newest, offset=args.offset, name=args.name)
    if args.json:
        print(json.dumps([job_as_json(job) for job in jobs], indent=2))
        return 0
    table = Table(title=counted(len(jobs), "job"))
    # A progress column only when a listed job reported progress.
    with_progress = any(job.progress is not None for job in jobs)
    for column in ("id", "name", "Queue", "state", "attempt", "due at",
                   *(("progress",) if with_progress else ()), "last error"):
        table.add_column(column)
    for job in jobs:
        progress = (user_text(progress_text(job.progress)),) if with_progress else ()
        table.add_row(str(job.id), user_text(job.name), user_text(job.queue), job.state.value,
                      str(job.attempt), job.due_at.isoformat(timespec="seconds"), *progress,
                      user_text(job.last_error or job.arguments_error or ""))
    print_whole(make_console(), table)
    return 0
