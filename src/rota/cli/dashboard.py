"""`rota dashboard`: serve the web dashboard (rota.dashboard) with uvicorn.

Needs the extra `pip install 'rota[dashboard]'`; without it, one line saying so, exit 1.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import socket
import sys

from rota.cli.common import CommandError, UsageError, add_store_options, load_app
from rota.store import StoreConfigError, StoreError

TOKEN_VARIABLE = "ROTA_DASHBOARD_TOKEN"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "dashboard", help="serve the web dashboard (Queues, Worker Groups, jobs, /metrics)",
        description="Serve the web dashboard: Queues with their counts and controls, the "
        "Worker Groups' served shares against their weights, jobs with a detail view, "
        "JSON under /api/ and Prometheus metrics at /metrics. Needs "
        "pip install 'rota[dashboard]'.")
    add_store_options(parser, app_help="use this App's store (and show its Worker Groups)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only; "
                        "any other address without --token gets a warning at start, as "
                        "anyone who can reach it may then act)")
    parser.add_argument("--port", type=_port, default=8000,
                        help="port to listen on (default 8000; 0 picks a free one)")
    parser.add_argument("--token", metavar="T",
                        help="actions (pause, resume, limit, group policies, cancel, requeue, "
                        "bulk cancel and requeue) need this token "
                        f"(default: ${TOKEN_VARIABLE}; none: anyone who can reach the page)")
    parser.set_defaults(func=run)


def _port(text: str) -> int:
    value = int(text) if text.isascii() and text.isdigit() else -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a whole number from 0 to 65535; got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from rota.dashboard import EXTRA_MISSING, missing_modules

    if missing_modules():
        raise CommandError(EXTRA_MISSING)
    if args.store and args.app:
        raise UsageError("give --store or --app, not both")
    token = args.token if args.token is not None else os.environ.get(TOKEN_VARIABLE) or None
    if token is not None and not token.strip():
        raise UsageError("--token must not be empty")
    source: object
    if args.app:
        source = load_app(args.app)
    else:
        source = args.store or os.environ.get("ROTA_STORE")
        if not source:
            raise UsageError("no store given: pass --store URL or --app module:attribute, "
                             "or set ROTA_STORE")
    try:
        listener = socket.create_server((args.host, args.port))
    except OSError as error:
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {error.strerror}") \
            from None
    try:
        return _serve(source, token, listener)
    finally:
        listener.close()


def _loopback(address: str) -> bool:
    """Whether the address bound is this machine's alone (an IPv6 one may carry a %zone)."""
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _serve(source: object, token: str | None, listener: socket.socket) -> int:
    import uvicorn

    from rota.app import App
    from rota.dashboard import create_app

    assert isinstance(source, str | App)
    try:
        application = create_app(source, token=token)
    except (StoreConfigError, ValueError) as error:
        raise UsageError(str(error)) from None
    except StoreError as error:
        raise CommandError(str(error)) from None
    host, port = listener.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if token is None and not _loopback(host):
        print(f"rota dashboard: warning: listening on {host} without a token: anyone who "
              "can reach this address can pause, resume and limit Queues, set group "
              "policies, and cancel and requeue jobs, one or every job a filter selects. "
              f"Pass --token (or set ${TOKEN_VARIABLE}), or bind to "
              "127.0.0.1", file=sys.stderr, flush=True)
    config = uvicorn.Config(application, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    # uvicorn stops gracefully on SIGINT/SIGTERM, then re-raises the signal to the handler
    # that was there before it: make that one ask for the same stop (it is also what
    # answers a signal that comes before uvicorn installs its own), so a stop exits 0,
    # like `rota worker`.
    def stop(_signum: int, _frame: object) -> None:
        server.should_exit = True

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    # Announced once a stop is answered: whoever reads this line may send one at once.
    print(f"rota dashboard: serving {application.state.rota_dashboard.source.url} at "
          f"http://{shown}:{port}/" + (" (actions need the token)" if token else ""),
          flush=True)
    server.run(sockets=[listener])
    return 0
