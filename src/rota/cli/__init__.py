"""The `rota` command: the one place that wires objects from text.

Each subcommand lives in its own module of this package and exposes
`register(subparsers)` (adds its argparse parser, setting `func` to a callable taking the
parsed namespace and returning an exit code). Exit codes: 0 success, 2 usage error, 1
anything else, with a one-line message and no traceback for expected errors.

Every module `SUBCOMMANDS` names must import: one that is missing or broken fails the
`rota` command loudly, with its ImportError, instead of the subcommand silently
vanishing from the help. So a subcommand module imports only rota's own dependencies at
module level, and an optional extra's package inside the function that needs it: `rota
dashboard` checks its extra when it runs (`rota.dashboard.missing_modules`) and says
`pip install 'rota[dashboard]'`, `rota worker --metrics-port` does the same for
`rota[metrics]`, and a `postgresql://` store for `rota[postgres]` (rota.store.open_store).
`import rota` and `rota --help` work without any extra.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import sys
import traceback
from collections.abc import Sequence

from rota.cli.common import CommandError
from rota.version import __version__

SUBCOMMANDS = (
    "worker", "enqueue", "cancel", "queues", "jobs", "simulate", "demo", "migrate",
    "job", "requeue",
    "purge",
    "pause", "resume", "limit", "rate",
    "policy",
    "schedule", "schedules",
    "workers",
    "dashboard",
    "health",
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `rota` parser with every subcommand, or with `command`'s alone: then the other
    subcommands' modules (and what they import, such as rich's tables) stay unloaded,
    about a fifth of a `rota worker` process's start-up otherwise (docs/benchmarks.md).

    Raises:
        ImportError: a subcommand's module is missing or fails to import (with a note
            naming the subcommand).
    """
    parser = argparse.ArgumentParser(
        prog="rota",
        description="rota: background jobs with fair, deterministic dispatch between Queues.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more logging (-v info, -vv debug)")
    parser.add_argument("--debug", action="store_true",
                        help="on an error, print its traceback too (or set ROTA_DEBUG=1)")
    parser.add_argument("--version", action="version", version=f"rota {__version__}",
                        help="print rota's version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS if command is None else (command,):
        try:
            module = importlib.import_module(f"rota.cli.{name}")
        except ImportError as error:
            error.add_note(f"rota: the module of the subcommand {name!r} (rota.cli.{name}) "
                           "failed to import")
            raise
        module.register(subparsers)
    for each in (parser, *subparsers.choices.values()):
        _take_negatives_as_values(each)
    return parser


# What argparse reads as a negative number (a value, not an option): by default only
# `-5` or `-0.5`, so `rota rate b -5/1m` said "the following arguments are required" and
# `--older-than -7d` "expected one argument". No option of rota starts with a dash and a
# digit, so any such word is a value, and the command's own check names it (a range).
_NEGATIVE_VALUE = re.compile(r"^-\d")


def _take_negatives_as_values(parser: argparse.ArgumentParser) -> None:
    parser._negative_number_matcher = _NEGATIVE_VALUE  # argparse has no API for it


VERBOSE_FLAGS = {"-v": 1, "-vv": 2, "-vvv": 3, "--verbose": 1}
# The top-level flags accepted anywhere on the line, moved before the command.
ANYWHERE_FLAGS = {*VERBOSE_FLAGS, "--debug"}


def _verbosity_first(argv: Sequence[str]) -> list[str]:
    """Accept -v and --debug anywhere (`rota worker app:app -v` as well as `rota -v worker
    app:app`)."""
    flags = [arg for arg in argv if arg in ANYWHERE_FLAGS]
    return [*flags, *(arg for arg in argv if arg not in ANYWHERE_FLAGS)]


def _split_at_double_dash(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Options and positionals before the first `--`, and the verbatim arguments after it.

    What follows `--` is never an option, not even -v (`rota enqueue job -- -v hi` passes
    "-v" and "hi" as job arguments). argparse alone cannot do this for a command with
    options between its positionals and `--` (`rota enqueue job --json -- -v`), so the
    trailing arguments are parsed apart and handed to the command's `job_args`."""
    argv = list(argv)
    if "--" not in argv:
        return argv, []
    end = argv.index("--")
    return argv[:end], argv[end + 1:]


def main(argv: Sequence[str] | None = None) -> int:
    before, trailing = _split_at_double_dash(sys.argv[1:] if argv is None else argv)
    before = _verbosity_first(before)
    # The command is the first word after the -v flags (the top level has no option that
    # takes a value). Anything else (`rota`, `rota -h`, a typo) gets the whole parser, so
    # help and "invalid choice" list every command.
    first = next((arg for arg in before if arg not in ANYWHERE_FLAGS), None)
    parser = build_parser(first if first in SUBCOMMANDS else None)
    args = parser.parse_args(before)
    if trailing:
        if not isinstance(getattr(args, "job_args", None), list):
            parser.error(f"unrecognized arguments after '--': {' '.join(trailing)}")
        args.job_args.extend(trailing)
    if args.command is None:
        parser.print_help()
        return 2
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args))
    except CommandError as error:
        cause = error.__cause__
        if cause is not None and (args.debug or os.environ.get("ROTA_DEBUG", "") not in
                                  {"", "0"}):
            traceback.print_exception(cause, file=sys.stderr)
        print(f"rota {args.command}: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`rota jobs | head`): not an error. Point stdout at devnull so
        # the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
