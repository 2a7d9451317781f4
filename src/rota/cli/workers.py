"""`rota workers --store URL|--app APP [--jobs] [--json]`: the worker registry, read-only.

One row per worker process (host, pid, version, started, last seen, alive or dead, its
groups with the policy in force (a stored one, `rota policy`, marked with its version;
else the code's), pool use and served counts). Dead workers (not refreshed for a few
lease periods: killed, or cut off from the store) are shown as dead until removed.
`--jobs` adds what the live workers run now: each job in flight (id, name, Queue,
attempt, running for), read from the leases their groups hold (`Store.jobs_in_flight`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from rich.table import Table

from rota.cli.common import add_store_options, opened_store, store_now
from rota.cli.display import line, make_console, print_whole, user_text
from rota.core.durations import short_duration
from rota.core.group_policies import StoredPolicy
from rota.core.serving import in_force, workers_in_force
from rota.core.workers import (
    RunningJob,
    WorkerInfo,
    in_flight_owners,
    running_jobs,
    running_to_json,
    worker_to_json,
)
from rota.store import stored_policies

# The most jobs in flight `--jobs` lists, all workers together (longest running first).
MAX_JOBS_SHOWN = 1000


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "workers", help="the worker processes registered in the store, alive or dead",
        description="Every worker process registered in the store: host, pid, version, "
        "when it started and was last seen, whether it is alive, and per Worker Group its "
        "policy in force (a policy set with `rota policy` shows as 'stored vN'; else the "
        "code's), jobs in flight of its pool and attempts served. A worker not refreshed "
        "for a few lease periods is shown as dead (killed, or cut off from the store).")
    add_store_options(parser, json_help="print JSON instead of a table")
    parser.add_argument(
        "--jobs", action="store_true",
        help="also list each live worker's jobs in flight (id, name, Queue, attempt, "
        f"running for), longest running first, at most {MAX_JOBS_SHOWN}")
    parser.set_defaults(func=run)


def _ago(now: datetime, moment: datetime) -> str:
    return f"{short_duration((now - moment).total_seconds())} ago"


def _offset(worker: WorkerInfo) -> str:
    """How far the worker's clock runs ahead of the store's (rota uses the store's)."""
    return f"{worker.clock_offset.total_seconds():+.1f} s"


def _policy(worker: WorkerInfo, index: int, stored: Mapping[str, StoredPolicy]) -> str:
    group = worker.groups[index]
    if group.kind == "weighted":
        text = "Weighted " + ", ".join(f"{queue}={weight}" for queue, weight in group.weights)
    else:
        text = "Strict " + " > ".join(group.policy.queues)
    row = stored.get(group.name)
    if row is not None and in_force(None, row) is not None:
        text += f" (stored v{row.version})"
    return text


def run(args: argparse.Namespace) -> int:
    with opened_store(args.store, args.app, read_only=True) as store:
        now = store_now(store)
        registered = store.list_workers(now)
        stored = stored_policies(store)
        running: list[RunningJob] = []
        if args.jobs:
            jobs = store.jobs_in_flight(in_flight_owners(registered), MAX_JOBS_SHOWN)
            running = running_jobs(registered, jobs, now)
    # Each group's policy in force: the stored one if any, else the code's it registered.
    workers = workers_in_force(registered, stored)
    if args.json:
        listed = []
        for worker in workers:
            shape = worker_to_json(worker)
            if args.jobs:
                shape["jobs"] = [running_to_json(one) for one in running
                                 if one.worker == worker.id]
            listed.append(shape)
        print(json.dumps(listed, indent=2))
        return 0
    console = make_console()
    if not workers:
        console.print("no workers registered (none running, or all stopped gracefully)")
        return 0
    table = Table(title="Workers")
    for column in ("worker", "state", "version", "started", "last seen", "clock", "group",
                   "policy", "in flight", "served"):
        table.add_column(column, justify="right" if column in ("clock", "in flight", "served")
                         else "left")
    for worker in workers:
        state = line(("alive", "green")) if worker.alive else line(("DEAD", "bold red"))
        first = True
        for index, group in enumerate(worker.groups or ()):
            served = sum(c.count for c in worker.served if c.group == group.name)
            table.add_row(
                user_text(worker.id) if first else "", state if first else "",
                user_text(worker.version) if first else "",
                _ago(now, worker.started_at) if first else "",
                _ago(now, worker.last_seen) if first else "",
                _offset(worker) if first else "",
                user_text(group.name), user_text(_policy(worker, index, stored)),
                # A dead worker holds nothing it can finish: its jobs wait for the sweep.
                f"{group.in_flight if worker.alive else '-'}/{group.pool_size}", str(served),
            )
            first = False
        if first:  # a worker with no group (should not happen): still one row
            table.add_row(user_text(worker.id), state, user_text(worker.version),
                          _ago(now, worker.started_at), _ago(now, worker.last_seen),
                          _offset(worker), "", "", "", "")
    print_whole(console, table)
    if args.jobs:
        _print_running(console, running)
    return 0


def _print_running(console: Any, running: list[RunningJob]) -> None:
    if not running:
        console.print("no jobs in flight")
        return
    table = Table(title="Jobs in flight (longest running first)")
    for column in ("worker", "group", "job", "name", "Queue", "attempt", "running for"):
        table.add_column(column, justify="right" if column in ("job", "attempt", "running for")
                         else "left")
    for one in running:
        table.add_row(user_text(one.worker), user_text(one.group), str(one.job.id),
                      user_text(one.job.name), user_text(one.job.queue), str(one.job.attempt),
                      short_duration(one.running_for.total_seconds()))
    print_whole(console, table)
    if len(running) >= MAX_JOBS_SHOWN:
        console.print(f"(the first {MAX_JOBS_SHOWN} shown)")
