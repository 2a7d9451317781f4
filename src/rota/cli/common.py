"""What the `rota` subcommands share: errors, and loading an App or a store from text."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime

from rota.app import App
from rota.app.settings import stores_opened_read_only
from rota.core.job_filters import parse_meta_pairs
from rota.core.jobs import MAX_JOB_ID, JsonValue
from rota.store import Store, StoreClock, StoreConfigError, StoreError, open_store
from rota.store.base import Migratable


class CommandError(Exception):
    """An expected failure: printed as one line, no traceback."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(CommandError):
    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)


def whole_number(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse type: a whole number from `minimum` to `maximum`. Every integer option
    uses one, so every bad value (not a number, too small, too large) gets the one
    message `expected a whole number from 1 to 10000; got '-1'`."""

    def parse(text: str) -> int:
        stripped = text.strip()
        digits = stripped[1:] if stripped[:1] in {"+", "-"} else stripped
        # Checked before int(): more digits than int() reads would be its own ValueError
        value = (int(stripped) if digits.isascii() and digits.isdigit()
                 and len(digits) <= len(str(maximum)) else None)
        if value is None or not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {minimum} to {maximum}; got {text[:40]!r}")
        return value

    parse.__name__ = "whole number"  # argparse names the type by it in some messages
    return parse


def add_meta_option(parser: argparse.ArgumentParser) -> None:
    """--meta KEY=VALUE, repeatable: a meta filter (`meta_arg` reads it)."""
    parser.add_argument(
        "--meta", action="append", default=[], metavar="KEY=VALUE",
        help="only jobs whose meta holds KEY with this value (repeatable: all must "
        "match); VALUE is JSON when it parses as JSON (42, true, '\"42\"'), else text")


def meta_arg(pairs: list[str]) -> dict[str, JsonValue] | None:
    """The --meta options as a meta filter; None for none.

    Raises:
        UsageError: for a pair that is not KEY=VALUE.
    """
    try:
        return parse_meta_pairs(pairs) or None
    except ValueError as error:
        raise UsageError(str(error)) from None


def store_now(store: Store) -> datetime:
    """Now by the store's clock (PostgreSQL's server; this machine's for SQLite), as an
    App's would be: a command run on a machine whose clock is off still writes the
    store's time."""
    return StoreClock(store).now()


def job_id_arg(text: str) -> int:
    """argparse type of a job id: a whole number from 1 to MAX_JOB_ID (what stores hold)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value <= MAX_JOB_ID:
        raise argparse.ArgumentTypeError(
            f"job ids are whole numbers from 1 to {MAX_JOB_ID}; got {text!r}"
        )
    return value


# --limit (at least one job, or the command would show nothing) and --offset of a listing.
limit_arg = whole_number(1, MAX_JOB_ID)
offset_arg = whole_number(0, MAX_JOB_ID)


def load_app(spec: str, *, read_only: bool = False) -> App:
    """Import `module:attribute` and return the App it names. With `read_only` (the read
    commands), an App the import makes opens its store URL read-only: a mistyped
    `$ROTA_STORE` or path names the missing file instead of creating an empty store.

    Raises:
        UsageError: if the spec is malformed, the module cannot be imported, or the
            attribute is not an App.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(f"APP must be module:attribute (e.g. myproject.tasks:app); got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if "/" in module_name or "\\" in module_name or module_name.startswith("."):
        # A path, or a relative module name, which import_module cannot take without a package
        raise UsageError(f"APP {spec!r} names no module"
                         f"{_module_hint(module_name, attribute) or '; give the full module name'}")
    try:
        with stores_opened_read_only() if read_only else nullcontext():
            module = importlib.import_module(module_name)
    except ImportError as error:
        raise UsageError(f"cannot import {module_name!r} for APP {spec!r}: {error}"
                         f"{_module_hint(module_name, attribute)}") from None
    except StoreConfigError as error:
        # The module's `rota.App(url)` refused its URL (malformed, an unknown parameter,
        # the postgres extra missing): the same usage error as `--store URL` gives.
        raise UsageError(f"APP {spec!r}: {error}") from None
    except StoreError as error:
        raise CommandError(f"APP {spec!r}: {error}") from None
    except Exception as error:
        # The module itself raised: one line naming it and the error; its traceback with
        # --debug or ROTA_DEBUG=1 (the error is chained for that).
        raise UsageError(
            f"cannot import {module_name!r} for APP {spec!r}: it raised "
            f"{type(error).__name__}: {error} (the traceback: rota --debug, or "
            "ROTA_DEBUG=1)") from error
    target: object = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise UsageError(f"module {module_name!r} has no attribute {attribute!r}") from None
    if not isinstance(target, App):
        raise UsageError(f"{spec!r} is a {type(target).__name__}, not a rota.App")
    return target


def _module_hint(module_name: str, attribute: str) -> str:
    """For a file path where a module name belongs (`myapp.py`, `src/shop/jobs.py`): the
    module name to write instead."""
    path = module_name.replace("\\", "/")
    if not path.endswith(".py") and "/" not in path:
        return ""
    dotted = ".".join(part for part in path.removesuffix(".py").split("/")
                      if part not in {"", "."})
    return (f". APP names a module, not a file: write {dotted}:{attribute} (run from the "
            "directory the module's package starts in)")


def add_store_options(
    parser: argparse.ArgumentParser, *, json_help: str | None = None,
    app_help: str = "use this App's store",
) -> None:
    """--store and --app, which `opened_store` reads, and --json when `json_help` is given."""
    parser.add_argument("--store", metavar="URL", help="store URL (default: $ROTA_STORE)")
    parser.add_argument("--app", metavar="MODULE:ATTR", help=app_help)
    if json_help is not None:
        parser.add_argument("--json", action="store_true", help=json_help)


@contextmanager
def opened_store(
    store_url: str | None, app_spec: str | None, *, read_only: bool = False
) -> Iterator[Store]:
    """The store named by --store, else --app's store, else $ROTA_STORE.

    Closes the store afterwards only if it opened it (an App's store stays the App's).
    Store errors inside the block become one-line `CommandError`s. Commands that only
    read pass `read_only=True`: an SQLite file is then opened read-only (works on a
    read-only file or directory, never migrates, never creates the file), however it is
    named: --store, $ROTA_STORE, or the URL the --app module gives its App.
    """
    if store_url and app_spec:
        raise UsageError("give --store or --app, not both")
    if app_spec:
        store, owned = load_app(app_spec, read_only=read_only).store, False
    else:
        url = store_url or os.environ.get("ROTA_STORE")
        if not url:
            raise UsageError("no store given: pass --store URL or --app module:attribute, "
                             "or set ROTA_STORE")
        try:
            store, owned = open_store(url, read_only=read_only), True
        except StoreConfigError as error:
            raise UsageError(str(error)) from None
        except StoreError as error:
            raise CommandError(str(error)) from None
    try:
        reach(store)
        yield store
    except StoreError as error:
        raise CommandError(str(error)) from None
    finally:
        if owned:
            store.close()


def reach(store: Store) -> None:
    """Fail at once, in one line, when the store cannot be reached: one direct connection
    (reading the schema version), before any pooled call. A pooled call to a PostgreSQL
    URL with a wrong port, database or role would wait out the pool's 30 s, its pool
    logging a warning at each retry, before the same error.

    Raises:
        StoreError: naming the store and the cause.
    """
    if isinstance(store, Migratable):
        store.schema_version()
