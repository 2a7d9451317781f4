"""`rota cancel`: cancel scheduled jobs by id so that they never run."""

from __future__ import annotations

import argparse

from rota.cli.common import CommandError, add_store_options, opened_store
from rota.core.clock import SystemClock


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "cancel", help="cancel scheduled jobs by id",
        description="Cancel scheduled jobs so that they never run. A job that is running "
        "or finished is left alone (and reported); exit 1 if any could not be cancelled.",
    )
    parser.add_argument("ids", nargs="+", type=int, metavar="ID", help="job ids")
    add_store_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    not_cancelled: list[int] = []
    with opened_store(args.store, args.app) as store:
        for job_id in args.ids:
            if store.cancel(job_id, SystemClock().now()):
                print(f"{job_id} cancelled")
            else:
                not_cancelled.append(job_id)
    if not_cancelled:
        raise CommandError(
            f"not scheduled (missing, running or finished), left alone: "
            f"{', '.join(map(str, not_cancelled))}"
        )
    return 0
