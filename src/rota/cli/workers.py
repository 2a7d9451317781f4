"""`rota workers --store URL|--app APP [--json]`: the worker registry, read-only.

One row per worker process (host, pid, version, started, last seen, alive or dead, its
groups with the policy in force (a stored one, `rota policy`, marked with its version;
else the code's), pool use and served counts). Dead workers (not refreshed for a few
lease periods: killed, or cut off from the store) are shown as dead until removed.
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
from rota.core.workers import WorkerInfo, worker_to_json
from rota.store import stored_policies


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "workers", help="the worker processes registered in the store, alive or dead",
        description="Every worker process registered in the store: host, pid, version, "
        "when it started and was last seen, whether it is alive, and per Worker Group its "
        "policy in force (a policy set with `rota policy` shows as 'stored vN'; else the "
        "code's), jobs in flight of its pool and attempts served. A worker not refreshed "
        "for a few lease periods is shown as dead (killed, or cut off from the store).")
    add_store_options(parser, json_help="print JSON instead of a table")
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
    # Each group's policy in force: the stored one if any, else the code's it registered.
    workers = workers_in_force(registered, stored)
    if args.json:
        print(json.dumps([worker_to_json(worker) for worker in workers], indent=2))
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
    return 0
