"""`rota cancel`: cancel jobs by id: scheduled and waiting ones at once, running ones on
request."""

from __future__ import annotations

import argparse
import json

from rota.cli.common import CommandError, add_store_options, job_id_arg, opened_store, store_now
from rota.core.jobs import JobRecord, JobState
from rota.core.plurals import counted
from rota.store import Store


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
        "left alone (and reported); exit 1 if any could not be cancelled.",
    )
    parser.add_argument("ids", nargs="+", type=job_id_arg, metavar="ID", help="job ids")
    add_store_options(parser, json_help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
