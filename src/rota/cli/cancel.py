"""`rota cancel`: cancel jobs by id, or every job a filter selects (--queue, --state,
--name, --meta; --all for every job): scheduled and waiting ones at once, running ones on
request."""

from __future__ import annotations

import argparse
import json

from rota.cli.common import (
    CommandError,
    UsageError,
    add_meta_option,
    add_store_options,
    job_id_arg,
    meta_arg,
    opened_store,
    store_now,
)
from rota.core.job_filters import job_filter
from rota.core.jobs import JobRecord, JobState, JsonValue
from rota.core.plurals import counted
from rota.store import Store, bulk
from rota.store.bulk import CANCEL_ORDER, refuse_empty


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "cancel", help="cancel jobs by id (running ones on request)",
        description="Cancel jobs. A scheduled job, or a waiting one (a workflow job whose "
        "parents have not all finished), is cancelled at once and never runs; its "
        "waiting children that were to run only after it succeeded are cancelled with "
        "it (the line says how many), those enqueued with after_outcome='finished' go "
        "on. A running job gets a cancel request that its worker receives with its next "
        "heartbeat (an async handler is cancelled; a sync one should check "
        "rota.current_job().cancel_requested); it then ends cancelled. A finished job is "
        "left alone (and reported); exit 1 if any given by id could not be cancelled. "
        "Without ids, cancels every job the filters select, a page of 500 at a time, and "
        "prints how many it cancelled (`rota cancel --queue emails --state scheduled`); "
        "with no filter at all it refuses, unless --all says to cancel every job.",
    )
    parser.add_argument("ids", nargs="*", type=job_id_arg, metavar="ID", help="job ids")
    parser.add_argument("--queue", metavar="QUEUE", help="cancel the jobs of this Queue")
    parser.add_argument("--state", choices=[s.value for s in CANCEL_ORDER],
                        help="cancel only the jobs in this state")
    parser.add_argument("--name", metavar="NAME", help="cancel only jobs of this job name")
    add_meta_option(parser)
    parser.add_argument("--all", action="store_true", dest="everything",
                        help="with no filter: cancel every unfinished job of the store")
    add_store_options(parser, json_help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    meta = meta_arg(args.meta)
    filtered = args.queue is not None or args.state or args.name is not None \
        or meta is not None or args.everything
    if args.ids and filtered:
        raise UsageError("give job ids, or filters (--queue, --state, --name, --meta, --all), "
                         "not both")
    if not args.ids and not filtered:
        raise UsageError("give job ids, or filters: --queue Q, --state S, --name N, --meta "
                         "KEY=VALUE (--all: every job)")
    if not args.ids:
        return _cancel_selected(args, meta)
    return _cancel_ids(args)


def _cancel_selected(args: argparse.Namespace, meta: dict[str, JsonValue] | None) -> int:
    try:
        selected = job_filter(args.queue, args.state, args.name, meta)
        refuse_empty(selected, args.everything, "cancel")
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
    with opened_store(args.store, args.app) as store:
        count = bulk.cancel_jobs(store, selected, store_now(store)).count
    if args.json:
        print(json.dumps({"cancelled": count}))
    else:
        print(f"cancelled {counted(count, 'job')} (running ones on request)")
    return 0


def _cancel_ids(args: argparse.Namespace) -> int:
    cancelled: list[int] = []
    requested: list[int] = []
    refused: dict[int, str] = {}
    with opened_store(args.store, args.app) as store:
        for job_id in args.ids:
            before = store.get_job(job_id)
            children = _waiting_children(store, job_id)
            if store.cancel(job_id, store_now(store)):
                job = store.get_job(job_id)
                if job is not None and job.state is JobState.LEASED:
                    requested.append(job_id)
                    if not args.json:
                        print(f"{job_id} cancel requested (running: its worker stops it "
                              "at its next heartbeat)")
                else:
                    cancelled.append(job_id)
                    if not args.json:
                        print(f"{job_id} cancelled{_what_else(store, before, children)}")
                continue
            job = store.get_job(job_id)
            refused[job_id] = ("no such job" if job is None
                               else f"it already finished ({job.state.value})")
    if args.json:
        print(json.dumps({
            "cancelled": cancelled, "cancel_requested": requested,
            "not_cancelled": [{"id": i, "reason": why} for i, why in refused.items()],
        }))
    if refused:
        reasons = "; ".join(f"job {i}: {why}" for i, why in refused.items())
        raise CommandError(f"not cancelled, left alone: {reasons}")
    return 0


def _waiting_children(store: Store, job_id: int) -> list[int]:
    """The children of `job_id` that are waiting now (so a cancel may end them too)."""
    return [child for child in store.job_children(job_id)
            if (record := store.get_job(child)) is not None
            and record.state is JobState.WAITING]


def _what_else(store: Store, before: JobRecord | None, children: list[int]) -> str:
    """What the line of a cancelled job adds: that it was waiting for its parents, and
    how many of its waiting `children` the cancel ended too (their own children, in
    turn, are not counted)."""
    said = ""
    if before is not None and before.state is JobState.WAITING:
        said = " (it was waiting for its parents)"
    ended = sum(1 for child in children if (record := store.get_job(child)) is not None
                and record.state is JobState.CANCELLED)
    if ended:
        said += (f", and with it {counted(ended, 'waiting child', 'waiting children')} "
                 f"that {'was' if ended == 1 else 'were'} to run only after it succeeded")
    return said
