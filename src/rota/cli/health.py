"""`rota health --store URL|--app APP [--json] [--strict]`: exit 0 when the store can
serve, 1 with the reason when not; for probes (systemd, Kubernetes, load balancers).

Warnings (a held xmin horizon, dead rows, a large SQLite WAL: rota.core.storage_health)
go to stderr as `rota health: warning: ...` and leave the exit status at 0: a liveness
probe must not restart workers for someone else's snapshot. `--strict` makes them fail
(exit 1), for an alerting timer.

The check is `rota.app.status.check_health` (the dashboard's `/healthz` answers with it too).
A store given by URL is opened read-only: the probe never creates or migrates it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from rota.app.status import Health, check_store_url
from rota.cli.common import UsageError, add_store_options, load_app


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "health", help="exit 0 when the store answers with a current schema (and, with "
        "--app, live workers serve its Queues), else 1 with the reason",
        description="Check that the store answers and that its schema is the one this "
        "rota's migrations reach; with --app, also that a live worker serves every Queue "
        "of the App's Worker Groups. Exit 0 when all holds, 1 otherwise, with the reason "
        "on stderr. A store given by URL is opened read-only: never created, never "
        "migrated. Use it as a liveness probe with --store, a readiness probe with --app. "
        "Warnings (an xmin horizon held back over 5 minutes, a rota table with more dead "
        "rows than live ones, an SQLite WAL over 64 MiB) are printed on stderr and do not "
        "change the exit status unless --strict.")
    add_store_options(parser, json_help="print the answer as JSON (the body of the "
                      "dashboard's /healthz), whatever it is",
                      app_help="check this App's store and that live workers serve the "
                      "Queues of its Worker Groups")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 on warnings too (for alerts; not for liveness probes)")
    parser.set_defaults(func=run)


def _checked(args: argparse.Namespace) -> Health:
    if args.store and args.app:
        raise UsageError("give --store or --app, not both")
    if args.app:
        return load_app(args.app, read_only=True).health()
    url = args.store or os.environ.get("ROTA_STORE")
    if not url:
        raise UsageError("no store given: pass --store URL or --app module:attribute, "
                         "or set ROTA_STORE")
    return check_store_url(url)


def run(args: argparse.Namespace) -> int:
    health = _checked(args)
    if args.json:
        print(json.dumps(health.to_json()))
    elif health.ok:
        served = f"; live workers serve its Queues {', '.join(health.queues)}" \
            if health.queues else ""
        schema = "" if health.schema_version is None else \
            f", schema version {health.schema_version} is current"
        print(f"ok: {health.store} answers{schema}{served}")
    for problem in health.problems:
        print(f"rota health: {problem}", file=sys.stderr)
    for warning in health.warnings:
        print(f"rota health: warning: {warning}", file=sys.stderr)
    failed = not health.ok or (args.strict and bool(health.warnings))
    return 1 if failed else 0
