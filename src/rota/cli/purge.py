"""`rota purge`: delete finished jobs older than a duration, now, in bounded batches."""

from __future__ import annotations

import argparse
import json
import re
from datetime import timedelta

from rota.cli.common import UsageError, add_store_options, opened_store, store_now
from rota.core.plurals import counted
from rota.core.retention import PURGEABLE_STATES, purgeable_states
from rota.worker.retention import purge_finished

_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
DURATION_FORM = "a number and a unit: 30s, 15m, 12h or 7d"


def parse_duration(text: str) -> timedelta:
    """`30s`, `15m`, `12h`, `7d` (decimals allowed: `1.5h`) as a timedelta.

    Raises:
        ValueError: naming the text and the expected form.
    """
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        if _DURATION.fullmatch(text.strip().lower().removeprefix("-")):
            raise ValueError(f"--older-than must be a duration of 0 or more; got {text!r} "
                             f"({DURATION_FORM})")
        raise ValueError(f"{text!r} is not a duration; expected {DURATION_FORM}")
    try:
        return timedelta(**{_UNITS[match[2]]: float(match[1])})
    except OverflowError:
        raise ValueError(f"{text!r} is too long a duration") from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    names = ", ".join(state.value for state in PURGEABLE_STATES)
    parser = subparsers.add_parser(
        "purge", help="delete finished jobs older than a duration",
        description="Delete finished jobs that finished more than --older-than ago, in "
        "batches of at most 1,000 rows with short pauses between them, so workers keep "
        "claiming meanwhile. Scheduled and leased jobs are never deleted.",
    )
    parser.add_argument("--older-than", metavar="DURATION",
                        help=f"required: {DURATION_FORM}")
    parser.add_argument("--state", action="append", metavar="STATE",
                        help=f"only this finished state (repeatable; default all: {names})")
    add_store_options(parser, json_help="print the result as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.older_than is None:
        raise UsageError(f"--older-than is required ({DURATION_FORM})")
    try:
        age = parse_duration(args.older_than)
        states = purgeable_states(args.state)
    except ValueError as error:
        raise UsageError(str(error)) from None
    with opened_store(args.store, args.app) as store:
        finished_before = store_now(store) - age
        deleted = purge_finished(store, states, finished_before)
    if args.json:
        print(json.dumps({
            "deleted": deleted,
            "older_than_s": age.total_seconds(),
            "finished_before": finished_before.isoformat(),
            "states": [state.value for state in states],
        }))
    else:
        print(f"deleted {counted(deleted, 'finished job')} ({', '.join(s.value for s in states)}) "
              f"that finished before {finished_before.isoformat(timespec='seconds')}")
    return 0
