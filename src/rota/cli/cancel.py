"""`rota cancel`: cancel jobs by id: scheduled ones at once, running ones on request."""

from __future__ import annotations

import argparse
import json

from rota.cli.common import CommandError, add_store_options, job_id_arg, opened_store, store_now
from rota.core.jobs import JobState


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "cancel", help="cancel jobs by id (running ones on request)",
        description="Cancel jobs. A scheduled job is cancelled at once and never runs. A "
        "running job gets a cancel request that its worker receives with its next "
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
                        print(f"{job_id} cancelled")
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
