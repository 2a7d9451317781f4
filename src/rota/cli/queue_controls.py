"""`rota pause`, `rota resume`, `rota limit`, `rota rate` and `rota queues`: operate Queues.

Settings are written to the store; every worker on it obeys them at its next claim.
A Queue need not have jobs yet (settings can precede jobs).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from datetime import timedelta
from typing import TypeAlias

from rich.table import Table

from rota.cli.common import UsageError, add_store_options, opened_store, store_now
from rota.cli.display import make_console, print_whole, user_text
from rota.core.durations import short_duration
from rota.core.families import validate_entry
from rota.core.jobs import JobState
from rota.core.queue_controls import QueueInfo, QueueSettings, validate_queue_limit
from rota.core.rates import RATE_FORM, QueueRate, describe_period, parse_rate
from rota.core.serving import ServingIndex, policies_of, serving_groups
from rota.core.settings_range import setting_range
from rota.store import Store, policies_in_force

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
JSON_HELP = "print the Queue's settings as JSON"


def _queue_command(
    subparsers: Subparsers, name: str, summary: str, run: Callable[[argparse.Namespace], int]
) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(name, help=summary, description=(
        f"{summary}. Every worker on the store obeys it at its next claim; the Queue need "
        "not have jobs yet."))
    parser.add_argument("queue", metavar="QUEUE",
                        help="the Queue's name, or a family ('tenant-*', quoted: each "
                        "Queue it holds, unless a Queue's own setting wins)")
    add_store_options(parser, json_help=JSON_HELP)
    parser.set_defaults(func=run)
    return parser


def register_pause(subparsers: Subparsers) -> None:
    _queue_command(subparsers, "pause", "pause a Queue: claims take none of its jobs "
                   "(leased jobs finish normally)", run_pause)


def register_resume(subparsers: Subparsers) -> None:
    _queue_command(subparsers, "resume", "resume a paused Queue", run_resume)


def register_limit(subparsers: Subparsers) -> None:
    parser = _queue_command(
        subparsers, "limit", "set the most jobs of a Queue leased at once, all workers "
        "together (or 'none' for no limit)", run_limit)
    parser.add_argument("limit", metavar="N", help=f"a whole number {setting_range(0)} "
                        "(0 takes nothing), or none")


def register_rate(subparsers: Subparsers) -> None:
    parser = _queue_command(
        subparsers, "rate", "set a Queue's rate limit: at most BURST + N * T / PERIOD of its "
        "jobs claimed over any interval T, all workers together (or 'none' for no rate)",
        run_rate)
    parser.add_argument("rate", metavar="N/PERIOD", help=f"{RATE_FORM}; or none")
    parser.add_argument("--burst", metavar="B", help="the most jobs claimed at once after "
                        f"a quiet spell, a whole number {setting_range(1)} (default N)")


def register_queues(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "queues", help="every Queue: paused, limit, jobs per state, due now",
        description="Every Queue that has jobs or settings: paused, limit, jobs per state "
        "(waiting: workflow jobs whose parents have not all finished; they are not due), "
        "jobs due now, how long the oldest has waited, and which Worker Groups of live "
        "workers serve it now, by their policies in force (a policy set with `rota "
        "policy` counts from when it is set; 'nobody' marks a Queue no live worker "
        "serves, in red when it has due jobs).")
    add_store_options(parser, json_help="print JSON instead of a table (served_by, "
                      "weights per group, unserved: due jobs and no live worker serves it)",
                      app_help="use this App's store")
    parser.set_defaults(func=run_queues)


def _queue_name(text: str) -> str:
    try:
        return validate_entry(text)
    except ValueError as error:
        raise UsageError(str(error)) from None


def parse_limit(text: str) -> int | None:
    """`N` of `rota limit Q N`: a whole number in the range every Queue limit has
    (`validate_queue_limit`), or `none`.

    Raises:
        UsageError: for anything else, naming the range.
    """
    if text.strip().lower() == "none":
        return None
    try:
        limit = int(text)
    except ValueError:  # not a number, or more digits than int() reads
        raise UsageError(f"N must be a whole number {setting_range(0)}, or 'none' for no "
                         f"limit; got {text[:40]!r}") from None
    try:
        return validate_queue_limit(limit)
    except ValueError as error:
        raise UsageError(str(error)) from None


def _describe(settings: QueueSettings) -> str:
    limit = "no limit" if settings.limit is None else f"limit {settings.limit}"
    state = "paused" if settings.paused else "not paused"
    return f"Queue {settings.queue!r}: {state}, {limit}"


def _change(args: argparse.Namespace, change: Callable[[Store], QueueSettings]) -> int:
    with opened_store(args.store, args.app) as store:
        settings = change(store)
        # Settings may precede jobs, so a Queue with none is no error; but a typo in its
        # name would look the same, so the output says there are none.
        has_jobs = any(queue == settings.queue for queue, _ in store.count_jobs())
    if args.json:
        print(json.dumps(
            {"queue": settings.queue, "paused": settings.paused, "limit": settings.limit}))
    else:
        print(_describe(settings))
        if not has_jobs:
            print(f"no jobs in Queue {settings.queue!r} yet; the setting applies when they "
                  "come (check the name if you expected some)")
    return 0


def run_pause(args: argparse.Namespace) -> int:
    queue = _queue_name(args.queue)
    return _change(args, lambda store: store.pause_queue(queue))


def run_resume(args: argparse.Namespace) -> int:
    queue = _queue_name(args.queue)
    return _change(args, lambda store: store.resume_queue(queue))


def run_limit(args: argparse.Namespace) -> int:
    queue = _queue_name(args.queue)
    limit = parse_limit(args.limit)
    return _change(args, lambda store: store.set_queue_limit(queue, limit))


def run_rate(args: argparse.Namespace) -> int:
    queue = _queue_name(args.queue)
    rate: QueueRate | None = None
    if args.rate.strip().lower() == "none":
        if args.burst is not None:
            raise UsageError("--burst goes with a rate, not with 'none'")
    else:
        try:
            burst = None if args.burst is None else int(args.burst)
        except ValueError:
            raise UsageError(f"--burst must be a whole number {setting_range(1)}; got "
                             f"{args.burst[:40]!r}") from None
        try:
            rate = parse_rate(args.rate, burst)
        except ValueError as error:
            raise UsageError(str(error)) from None
    with opened_store(args.store, args.app) as store:
        store.set_queue_rate(queue, rate)
        has_jobs = any(name == queue for name, _ in store.count_jobs())
    if args.json:
        print(json.dumps({"queue": queue, "rate": rate_as_json(rate)}))
        return 0
    described = ("no rate limit" if rate is None else
                 f"rate {rate.jobs}/{describe_period(rate.per)}, burst {rate.burst} "
                 "(bucket full)")
    print(f"Queue {queue!r}: {described}")
    if not has_jobs:
        print(f"no jobs in Queue {queue!r} yet; the setting applies when they come (check "
              "the name if you expected some)")
    return 0


def rate_as_json(rate: QueueRate | None) -> dict[str, object] | None:
    if rate is None:
        return None
    return {"jobs": rate.jobs, "per_s": rate.per.total_seconds(), "burst": rate.burst}


def info_as_json(info: QueueInfo) -> dict[str, object]:
    return {
        "name": info.name, "paused": info.paused, "limit": info.limit,
        "rate": rate_as_json(info.rate),
        "tokens": info.tokens,
        "next_token_at": None if info.next_token_at is None else info.next_token_at.isoformat(),
        "counts": {state.value: info.counts[state] for state in JobState},
        "due": info.due,
        "oldest_due_at": None if info.oldest_due_at is None else info.oldest_due_at.isoformat(),
        "family": info.family, "members": info.members,
    }


def run_queues(args: argparse.Namespace) -> int:
    with opened_store(args.store, args.app, read_only=True) as store:
        now = store_now(store)
        infos = store.queue_infos(now)
        live = policies_of(policies_in_force(store, now))
    index = ServingIndex(live)
    serving = {info.name: serving_groups(info.name, index) for info in infos}
    if args.json:
        rows = [info_as_json(info) for info in infos]
        for row, info in zip(rows, infos, strict=True):
            row["served_by"] = list(serving[info.name])
            row["weights"] = serving[info.name]
            row["unserved"] = info.members is None and info.due > 0 and not serving[info.name]
        print(json.dumps(rows, indent=2))
        return 0
    # Twelve columns: in a terminal rich fits them to its width; piped, make_console
    # prints them in full.
    console = make_console()
    if not infos:
        console.print("no Queues: no jobs and no settings")
        return 0
    table = Table(title="Queues")
    table.add_column("Queue")
    table.add_column("paused")
    table.add_column("limit", justify="right")
    table.add_column("rate", justify="right")
    for state in JobState:
        table.add_column(state.value, justify="right")
    table.add_column("due", justify="right")
    table.add_column("oldest due", justify="right")
    table.add_column("served by")
    unserved = 0
    for info in infos:
        waited = "" if info.oldest_due_at is None else _ago(now - info.oldest_due_at)
        groups = serving[info.name]
        if groups:
            served_by = user_text(", ".join(groups))
        elif info.members is not None:  # a family: its members say who serves them
            served_by = user_text("")
        else:
            unserved += info.due > 0
            served_by = user_text("nobody", "bold red" if info.due else "")
        name = info.name if info.members is None else f"{info.name} ({info.members} Queues)"
        table.add_row(
            user_text(name), "paused" if info.paused else "", "" if info.limit is None
            else str(info.limit), "" if info.rate is None else str(info.rate),
            *(str(info.counts[s] or "") for s in JobState),
            str(info.due or ""), waited, served_by,
        )
    print_whole(console, table)
    if unserved:
        what = ("1 Queue with due jobs is" if unserved == 1
                else f"{unserved} Queues with due jobs are")
        console.print(f"{what} served by no live worker: such jobs wait until a worker "
                      "whose group's policy in force serves their Queue runs.")
    return 0


def _ago(waited: timedelta) -> str:
    return f"{short_duration(waited.total_seconds())} ago"
