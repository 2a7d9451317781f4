"""`rota worker APP [--group NAME ...] [--grace SECONDS]`: run an App's Worker Groups.

Runs until SIGINT/SIGTERM, then shuts down gracefully (see `App.run`). Exit codes: 0 after
a graceful shutdown, 2 for a usage error (bad APP, unknown group, bad --grace), 1 for any
other failure (an invalid Dispatch Policy, an unreachable store), 128 + signal number when
a second signal cut the shutdown short.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from rota.cli.common import CommandError, UsageError, load_app
from rota.store import StoreConfigError, StoreError
from rota.store.base import Migratable


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds; got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected zero or more seconds; got {text!r}")
    return value


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "worker",
        help="run an App's Worker Groups until SIGINT/SIGTERM",
        description="Run the Worker Groups of APP until SIGINT or SIGTERM. The first signal "
        "stops claiming, lets running jobs finish within the grace period and hands the "
        "rest back to their Queues; a second signal exits at once.",
    )
    parser.add_argument("app", metavar="APP", help="the App, as module:attribute")
    parser.add_argument("--group", action="append", dest="groups", metavar="NAME",
                        help="run only this Worker Group (repeatable); default: all")
    parser.add_argument("--grace", type=_seconds, default=None, metavar="SECONDS",
                        help="how long running jobs may finish at shutdown (default: each "
                        "group's grace_period, 30 s unless configured)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    app = load_app(args.app)
    known = [options.name for options in app.worker_groups]
    if not known:
        raise CommandError(f"{args.app} has no Worker Group; add one with "
                           "app.add_worker_group(rota.WorkerGroupOptions(name=..., policy=...))")
    groups: list[str] | None = args.groups
    if groups is not None:
        unknown = sorted(set(groups) - set(known))
        if unknown:
            raise UsageError(f"no Worker Group named {', '.join(unknown)} in {args.app}; "
                             f"it has: {', '.join(known)}")
    selected = groups if groups is not None else known
    try:
        # Starting the groups validates their policies, exactly as app.run() will (it
        # reuses the started groups), but before this command says it is running.
        app._start_groups(selected)
        if isinstance(app.store, Migratable):
            # Fail fast on a store that is unreachable at start; once running, store
            # errors are retried with backoff instead.
            app.store.migrate()
    except (ValueError, StoreError) as error:
        app.close()
        raise CommandError(str(error)) from None
    print(f"rota worker: running {', '.join(selected)} on {app.store.url} "
          "(Ctrl-C or SIGTERM to stop)", file=sys.stderr, flush=True)
    try:
        app.run(groups=groups, grace=args.grace)
    except StoreConfigError as error:
        raise UsageError(str(error)) from None
    except (ValueError, StoreError) as error:
        raise CommandError(str(error)) from None
    finally:
        app.close()
    print("rota worker: stopped", file=sys.stderr, flush=True)
    return 0
