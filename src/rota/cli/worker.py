"""`rota worker APP [--group NAME ...] [--grace SECONDS]`: run an App's Worker Groups.

Runs until SIGINT/SIGTERM, then shuts down gracefully (see `App.run`). Exit codes: 0 after
a graceful shutdown, 2 for a usage error (bad APP, unknown group, bad --grace), 1 for any
other failure (an invalid Dispatch Policy, an unreachable store), 128 + signal number when
a second signal cut the shutdown short.

A SIGINT/SIGTERM that arrives while the worker is still starting (importing the App,
migrating the store), before `App.run` installs its graceful handlers, stops it at once
with exit code 0 and one line on stderr: nothing has been claimed yet, so nothing is
leased or lost. The handlers for that are the first thing `run` installs.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
from types import FrameType
from typing import Any

from rota.app import App, store_location
from rota.cli.common import CommandError, UsageError, load_app, whole_number
from rota.core.policy import PolicyFault
from rota.store import StoreConfigError, StoreError
from rota.store.base import Migratable


def with_fault(error: BaseException) -> str:
    """The error's message, and on a second line what is at fault in an invalid policy
    (its `PolicyFault` cause): the Weighted message is exact by specification."""
    if isinstance(error.__cause__, PolicyFault):
        return f"{error}\n{error.__cause__}"
    return str(error)


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
    parser.add_argument("--metrics-port", type=whole_number(0, 65535), default=None, metavar="N",
                        help="serve this process's Prometheus metrics at "
                        "http://HOST:N/metrics (needs pip install 'rota[metrics]')")
    parser.add_argument("--metrics-host", default="127.0.0.1", metavar="HOST",
                        help="the address the metrics server binds (default 127.0.0.1)")
    parser.set_defaults(func=run)


class _StoppedWhileStarting(BaseException):
    """SIGINT/SIGTERM arrived before `App.run` took signals over. A BaseException, like
    KeyboardInterrupt, so that an `except Exception` in the App's import code cannot
    swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop_while_starting(signum: int, frame: FrameType | None) -> None:
    raise _StoppedWhileStarting(signum)


def run(args: argparse.Namespace) -> int:
    # First thing: until App.run installs its graceful handlers (replacing these), a
    # signal unwinds the start-up (rolling back a migration in progress) instead of
    # killing the process with the default action. No job has been claimed before that.
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():  # else App.run refuses
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, _stop_while_starting)
    try:
        return _start_and_run(args)
    except _StoppedWhileStarting as stopped:
        print(f"rota worker: {signal.Signals(stopped.signum).name} received while starting; "
              "stopped before claiming any job", file=sys.stderr, flush=True)
        return 0
    finally:
        # App.run hands the signals back to their defaults when it returns; if it never
        # ran, put back what was there.
        for signum, handler in previous.items():
            if signal.getsignal(signum) is _stop_while_starting:
                signal.signal(signum, handler)


def _start_and_run(args: argparse.Namespace) -> int:
    app = load_app(args.app)
    try:
        return _run_app(app, args)
    finally:
        app.close()


def _run_app(app: App, args: argparse.Namespace) -> int:
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
        raise CommandError(with_fault(error)) from None
    if args.metrics_port is not None:
        _serve_metrics(app, args.metrics_host, args.metrics_port)
    print(f"rota worker: running {', '.join(selected)} on {store_location(app.store)} "
          "(Ctrl-C or SIGTERM to stop)", file=sys.stderr, flush=True)
    try:
        app.run(groups=groups, grace=args.grace)
    except StoreConfigError as error:
        raise UsageError(str(error)) from None
    except (ValueError, StoreError) as error:
        raise CommandError(str(error)) from None
    print("rota worker: stopped", file=sys.stderr, flush=True)
    return 0


def _serve_metrics(app: App, host: str, port: int) -> None:
    from rota.metrics import serve_metrics

    try:
        metrics = serve_metrics(app, port, host)
    except RuntimeError as error:  # the extra is missing: the message names the fix
        raise CommandError(str(error)) from None
    except OSError as error:
        raise CommandError(f"--metrics-port {port}: cannot listen on {host}:{port}: "
                           f"{error.strerror or error}") from None
    print(f"rota worker: metrics at http://{host}:{metrics.port}/metrics", file=sys.stderr,
          flush=True)
