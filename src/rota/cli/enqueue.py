"""`rota enqueue`: put one job on a Queue from the shell."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rota.app.definition import JobDefinition
from rota.cli.common import UsageError, add_store_options, load_app, opened_store, store_now
from rota.cli.display import shown
from rota.core.clock import SystemClock
from rota.core.durations import due_after, to_timedelta
from rota.core.jobs import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    MAX_ARGUMENT_DEPTH,
    NewJob,
    encode_arguments,
    validate_job_key,
    validate_job_name,
)
from rota.core.queues import validate_queue_name


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "enqueue", help="enqueue one job by name",
        description=(
            "Enqueue one job by its registered name. Each ARG is parsed as JSON, and taken "
            "as a plain string when it is not JSON (so 42 is a number, '\"42\"' a string). "
            "With --app the name must be one the App registers, the arguments must fit its "
            "handler and the job goes to the job's own Queue (unless --queue). Without "
            "--app nothing knows the handler: --queue is required, and the name and "
            "arguments are stored unchecked (a worker whose App registers no such job "
            "quarantines it)."
        ),
    )
    parser.add_argument("name", help="the job's registered name")
    parser.add_argument("job_args", nargs="*", metavar="ARG", help="positional arguments")
    parser.add_argument("--kwargs", metavar="JSON", help="keyword arguments as a JSON object")
    parser.add_argument("--queue", help="the Queue (default with --app: the job's own; "
                        "required without --app)")
    parser.add_argument("--delay", type=float, default=0.0, metavar="SECONDS",
                        help="due this many seconds from now (default 0)")
    parser.add_argument("--key", help="a unique job: while a job of this name and key is "
                        "scheduled or leased, store nothing and print its id")
    add_store_options(
        parser, app_help="use this App's store and check the job name is registered",
        json_help="print the job (id, name, Queue, due time) as JSON instead of its id",
    )
    parser.set_defaults(func=run)


def _parse_arg(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text
    except RecursionError:  # JSON nested deeper than the decoder goes
        raise UsageError(
            f"ARG {text[:20]!r}... is JSON nested more than {MAX_ARGUMENT_DEPTH} levels deep; "
            "job arguments may nest at most that much"
        ) from None


def run(args: argparse.Namespace) -> int:
    queue = args.queue
    max_bytes = DEFAULT_MAX_PAYLOAD_BYTES
    definition: JobDefinition[Any, Any] | None = None
    if args.app:
        app = load_app(args.app)
        max_bytes = app.max_payload_bytes
        definition = app.jobs.get(args.name)
        if definition is None:
            known = ", ".join(sorted(app.jobs)) or "none"
            raise UsageError(f"{args.app} registers no job named {args.name!r} (known: {known})")
        queue = queue or definition.queue
    kwargs = {}
    if args.kwargs:
        try:
            kwargs = json.loads(args.kwargs)
        except RecursionError:
            raise UsageError(f"--kwargs is JSON nested more than {MAX_ARGUMENT_DEPTH} levels "
                             "deep; job arguments may nest at most that much") from None
        except ValueError as error:
            raise UsageError(f"--kwargs must be a JSON object: {error}") from None
        if not isinstance(kwargs, dict):
            raise UsageError(f"--kwargs must be a JSON object; got {args.kwargs}")
    try:
        validate_job_name(args.name)
        queue = None if queue is None else validate_queue_name(queue)
        delay = to_timedelta(args.delay, "--delay", allow_zero=True)
        job_args = [_parse_arg(a) for a in args.job_args]
        if definition is not None:  # with --app: bind to the handler's signature first
            definition._check_arguments(job_args, kwargs)
            if definition.typed is not None:  # dataclass / pydantic parameters
                job_args, kwargs = definition.typed.to_json(job_args, kwargs)
        args_json, kwargs_json = encode_arguments(job_args, kwargs, max_bytes)
        due_after(SystemClock().now(), delay, "--delay")  # checked before opening a store
        key = None if args.key is None else validate_job_key(args.key)
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
    if queue is None:
        raise UsageError(
            f"--queue is required without --app: nothing here knows job {args.name!r} or "
            "its Queue. Give --queue QUEUE, or --app module:attribute to use the job's own "
            "Queue and check its name and arguments")
    with opened_store(args.store, args.app) as store:
        now = store_now(store)
        due_at = due_after(now, delay, "--delay")
        (job_id,) = store.enqueue(
            [NewJob(args.name, queue, due_at, args_json, kwargs_json, key=key)], now)
    if args.json:
        print(json.dumps({"id": job_id, "name": args.name, "queue": queue,
                          "due_at": due_at.isoformat()}, ensure_ascii=False))
    else:
        print(job_id)
    if definition is None:
        # On stderr, so that `id=$(rota enqueue ...)` still reads the id alone.
        print(f"rota enqueue: job name {shown(args.name)!r} not checked against any handler "
              "(no --app); a worker whose App registers no such job quarantines it",
              file=sys.stderr)
    return 0
