"""Running one claimed job's handler and turning what happened into an Outcome.

Shared by both drives: the inline drive (`App.run_until_idle`) calls sync handlers on the
spot; the real-time runtime hands them to its Worker threads through `call_sync`. Either
way the outcome comes from the same code, so the two drives cannot drift apart.

Imports the core and `rota.worker.group`; no asyncio, no store.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeAlias

from rota.core.clock import Clock
from rota.core.jobs import JobRecord
from rota.core.outcomes import Outcome, Quarantined, Succeeded, describe, unknown_job
from rota.worker.group import GroupRunner, Handler

logger = logging.getLogger("rota")

# Runs a blocking call somewhere (inline, or on a Worker thread) and gives back its result.
CallSync: TypeAlias = Callable[[Callable[[], object]], Awaitable[object]]


async def call_inline(func: Callable[[], object]) -> object:
    """The inline drive's `CallSync`: call on the spot, blocking the caller."""
    return func()


async def execute(
    job: JobRecord,
    handlers: Mapping[str, Handler],
    runner: GroupRunner,
    clock: Clock,
    call_sync: CallSync = call_inline,
) -> Outcome:
    """Run `job`'s handler once and decide its outcome.

    Async handlers are awaited on the calling event loop; sync ones go through
    `call_sync`. A job name with no handler is quarantined without running anything. An
    exception from the handler becomes a retry (with backoff) or a dead letter, decided by
    the job's RetryPolicy, else the group's. Cancellation is not an outcome: it propagates.
    A record whose stored arguments could not be decoded is quarantined unrun.
    """
    if job.arguments_error is not None:  # the durable stores quarantine these in the claim
        quarantined = Quarantined(job.arguments_error)
        logger.error("job %s (%s) attempt %s: %s", job.id, job.name, job.attempt,
                     describe(quarantined))
        return quarantined
    handler = handlers.get(job.name)
    if handler is None:
        quarantined = unknown_job(job.name)
        logger.warning("job %s (%s) attempt %s: %s", job.id, job.name, job.attempt,
                       describe(quarantined))
        return quarantined
    try:
        if handler.is_async:
            result = handler.func(*job.args, **job.kwargs)
        else:
            result = await call_sync(functools.partial(handler.func, *job.args, **job.kwargs))
        if inspect.isawaitable(result):  # a sync callable that returned an awaitable
            await result
    except Exception as error:
        outcome = runner.outcome_of_error(job, handler, error, clock.now())
        logger.warning("job %s (%s) attempt %s failed: %s", job.id, job.name, job.attempt,
                       describe(outcome), exc_info=error)
        return outcome
    return Succeeded()
