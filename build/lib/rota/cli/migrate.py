"""`rota migrate`: bring a store's schema up to date before workers start.

Stores migrate by themselves on first use (under a lock, so many nodes may start at once);
this command lets a deployment do it as an explicit step and see the version.
"""

from __future__ import annotations

import argparse
import json

from rota.cli.common import CommandError, UsageError, add_store_options, opened_store
from rota.store import SchemaTooNew
from rota.store.base import Migratable


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "migrate", help="apply the store's schema migrations",
        description="Apply the schema migrations the store lacks and print its version.",
    )
    add_store_options(parser, json_help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        with opened_store(args.store, args.app) as store:
            if not isinstance(store, Migratable):
                raise UsageError(f"{store.url} keeps no schema; there is nothing to migrate")
            applied = store.migrate()
            version = store.schema_version()
    except SchemaTooNew as error:
        raise CommandError(str(error)) from None
    if args.json:
        print(json.dumps({"store": store.url, "applied": applied, "schema_version": version}))
    elif applied:
        print(f"{store.url}: applied migrations {', '.join(map(str, applied))}; "
              f"schema at version {version}")
    else:
        print(f"{store.url}: schema already at version {version}")
    return 0
