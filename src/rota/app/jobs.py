"""The App's registered jobs: a handler for the workers and a definition for the callers.

`@app.job` options are checked before the function is seen (an unknown option, `priority`
above all, is a TypeError naming what exists), the job name when it is: 1-200 printable
characters, default `module.qualname`, unique within the App. A name is the job's wire
name, stored with every job, so two handlers can never share one.
Imports the core, the job definitions and the worker's `Handler`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any, ParamSpec, TypeVar

from rota.app.definition import NO_PRIORITY, JobDefinition, JobHost
from rota.core.durations import Duration, to_timedelta
from rota.core.jobs import validate_job_name
from rota.core.queues import validate_queue_name
from rota.core.retry import RetryPolicy
from rota.worker.group import Handler

P = ParamSpec("P")
R = TypeVar("R")


def checked_job_options(queue: str, retry: RetryPolicy | None, timeout: Duration | None,
                        unknown: Mapping[str, object]) -> timedelta | None:
    """`@app.job`'s options checked; returns the timeout as a timedelta (or None)."""
    if "priority" in unknown:
        raise TypeError(NO_PRIORITY)
    if unknown:
        raise TypeError(f"job() got unknown option(s) {sorted(unknown)}; it takes name, "
                        "queue=, retry= and timeout=")
    validate_queue_name(queue)
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise TypeError(f"retry must be a rota.RetryPolicy; got {retry!r}")
    return None if timeout is None else to_timedelta(timeout, "timeout")


class JobRegistry:
    """One App's jobs by name: `handlers` for its drives, `definitions` for its users."""

    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}
        self.definitions: dict[str, JobDefinition[Any, Any]] = {}

    def register(
        self, func: Callable[P, R], name: str | None, queue: str, retry: RetryPolicy | None,
        timeout: timedelta | None, *, host: JobHost,
        on_enqueued: Callable[[Iterable[str]], None],
    ) -> JobDefinition[P, R]:
        if not callable(func):
            raise TypeError(f"@app.job decorates a function; got {func!r}")
        job_name = validate_job_name(name or f"{func.__module__}.{func.__qualname__}")
        if job_name in self.handlers:
            raise ValueError(
                f"job name {job_name!r} is already registered; give each handler its own name"
            )
        definition = JobDefinition(host, job_name, func, queue, retry, on_enqueued=on_enqueued)
        self.handlers[job_name] = Handler(
            job_name, func, retry, timeout=timeout, max_payload_bytes=host.max_payload_bytes,
            arguments=definition.typed,
        )
        self.definitions[job_name] = definition
        return definition
