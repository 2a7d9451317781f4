"""Running one claimed job's handler and turning what happened into an Outcome.

Shared by both drives: the inline drive (`App.run_until_idle`) calls sync handlers on the
spot; the real-time runtime hands them to its Worker threads through `call_sync`. Either
way the outcome comes from the same code, so the two drives cannot drift apart.

While the handler runs, `rota.current_job()` gives its `CurrentJob` (a sync handler runs
in a copy of the context, so its thread sees it too). Per-job timeouts (`@app.job(...,
timeout=)`) depend on the drive:
- real time (`realtime=True`): an async handler is cancelled when its time is up; a sync
  one cannot be interrupted, so its attempt fails at once and `on_overrun` receives the
  future of the thread still running it (the runtime keeps that Worker occupied until it
  returns);
- inline (`run_until_idle`): nothing is interrupted; after the handler returns, an attempt
  that took longer than its timeout on the App's clock (a VirtualClock advanced by the
  handler, say) fails with TimeoutError and its result is dropped.
Either way the failure is a `TimeoutError`, retried by the job's RetryPolicy.

A cancel request delivered while the handler ran (`CurrentJob.request_cancel`; the runtime
also cancels an async handler's task) ends the attempt `Cancelled`, whatever the handler
returned or raised. (A handler stopped because its lease could not be renewed in time
ends the same way here; the runtime never writes that outcome: rota.worker.heartbeats.)

Imports the core and `rota.worker`; asyncio only for cancellation and timeouts; no store.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import TypeAlias

from rota.core.clock import Clock
from rota.core.jobs import JobRecord, encode_result
from rota.core.outcomes import (
    Cancelled,
    Outcome,
    Quarantined,
    RetryAt,
    Snoozed,
    Succeeded,
    describe,
    unknown_job,
)
from rota.core.retry import Retry
from rota.worker.context import _CURRENT, CurrentJob
from rota.worker.group import GroupRunner, Handler

logger = logging.getLogger("rota")

# Runs a blocking call somewhere (inline, or on a Worker thread) and gives back its result.
CallSync: TypeAlias = Callable[[Callable[[], object]], Awaitable[object]]
# Told about a sync handler's thread still running after its attempt timed out.
OnOverrun: TypeAlias = Callable[["asyncio.Future[object]"], None]


async def call_inline(func: Callable[[], object]) -> object:
    """The inline drive's `CallSync`: call on the spot, blocking the caller."""
    return func()


def _timed_out(handler: Handler, timeout: timedelta) -> TimeoutError:
    return TimeoutError(
        f"job {handler.name!r} ran longer than its timeout of {timeout.total_seconds():g} s"
    )


async def execute(
    job: JobRecord,
    handlers: Mapping[str, Handler],
    runner: GroupRunner,
    clock: Clock,
    call_sync: CallSync = call_inline,
    *,
    current: CurrentJob | None = None,
    realtime: bool = False,
    on_overrun: OnOverrun | None = None,
) -> Outcome:
    """Run `job`'s handler once and decide its outcome.

    Async handlers are awaited on the calling event loop; sync ones go through
    `call_sync`. A job name with no handler is quarantined without running anything. An
    exception from the handler (a timeout, a result that is not JSON or too large
    included) becomes a retry (with backoff) or a dead letter, decided by the job's
    RetryPolicy, else the group's; `rota.Snooze` becomes `Snoozed`. Typed arguments
    (dataclass or pydantic parameters) are built from their stored JSON first: one that no
    longer fits fails the attempt the same way. A delivered cancel request
    (`current.cancel_requested`) makes it `Cancelled`. Other cancellation is not an
    outcome: it propagates. A record whose stored arguments could not be decoded is
    quarantined unrun.

    Args:
        current: what `rota.current_job()` returns inside the handler; the caller keeps
            it to deliver a cancel request. Default: a new one.
        realtime: timeouts interrupt (the runtime) rather than being checked on the
            clock after the handler returns (the inline drive); see the module doc.
        on_overrun: (realtime) given the future of a sync handler's thread that outlived
            its timeout.
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
    if current is None:
        current = CurrentJob(job)
    timeout = handler.timeout
    if timeout is None and handler.is_async and handler.arguments is None:
        return await execute_async(job, handler, runner, clock, current)
    started_at = clock.now() if timeout is not None and not realtime else None
    token = _CURRENT.set(current)
    try:
        args: Sequence[object] = job.args
        kwargs: Mapping[str, object] = job.kwargs
        if handler.arguments is not None:  # stored JSON back into dataclasses / models
            args, kwargs = handler.arguments.from_json(args, kwargs)
        if handler.is_async:
            result = handler.func(*args, **kwargs)
            if timeout is not None and realtime and inspect.isawaitable(result):
                result = await _await_within(result, handler, timeout)
        else:
            call = functools.partial(
                contextvars.copy_context().run, handler.func, *args, **kwargs
            )
            if timeout is not None and realtime:
                result = await _call_within(call_sync(call), handler, timeout, on_overrun)
            else:
                result = await call_sync(call)
        if inspect.isawaitable(result):  # a sync callable that returned an awaitable
            result = await result
        if started_at is not None and timeout is not None and (
            clock.now() - started_at > timeout
        ):
            raise _timed_out(handler, timeout)
        result_json = encode_result(result, handler.max_payload_bytes)
    except asyncio.CancelledError as cancelled:
        return _on_cancelled(job, current, cancelled)
    except Exception as error:
        return _on_failure(job, handler, runner, clock, current, error)
    finally:
        _CURRENT.reset(token)
    if current.cancel_requested:
        return _cancelled(job, current)
    return Succeeded(result_json)


_SUCCEEDED_NONE = Succeeded()  # outcomes are immutable: one for every None result


async def execute_async(job: JobRecord, handler: Handler, runner: GroupRunner, clock: Clock,
                         current: CurrentJob) -> Outcome:
    """`execute`'s fast path, the common case: an async handler without a timeout. Nothing
    to time and no thread: set the contextvar, await the handler, encode its result. Per-job
    cost matters here (~10,000 jobs a second in a busy drain)."""
    token = _CURRENT.set(current)
    try:
        # An async handler's call returns a coroutine (Handler.is_async): no check.
        result = await handler.func(*job.args, **job.kwargs)  # type: ignore[misc]
        result_json = None if result is None else encode_result(result,
                                                                handler.max_payload_bytes)
    except asyncio.CancelledError as cancelled:
        return _on_cancelled(job, current, cancelled)
    except Exception as error:
        return _on_failure(job, handler, runner, clock, current, error)
    finally:
        _CURRENT.reset(token)
    if current._cancel_requested:
        return _cancelled(job, current)
    return _SUCCEEDED_NONE if result_json is None else Succeeded(result_json)


def _on_cancelled(job: JobRecord, current: CurrentJob,
                  cancelled: asyncio.CancelledError) -> Cancelled:
    """A handler's task was cancelled: by a cancel request (the attempt ends `Cancelled`;
    the task is uncancelled so the runtime goes on), or by anything else, such as shutdown
    (re-raised: not an outcome)."""
    if not current._cancel_requested:
        raise cancelled
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
    return _cancelled(job, current)


def _on_failure(job: JobRecord, handler: Handler, runner: GroupRunner, clock: Clock,
                current: CurrentJob, error: Exception) -> Outcome:
    """A handler raised: `Cancelled` if a cancel was requested meanwhile, else the retry or
    dead letter its RetryPolicy decides, logged once with the traceback."""
    if current._cancel_requested:
        return _cancelled(job, current)
    outcome = runner.outcome_of_error(job, handler, error, clock.now())
    if (isinstance(error, Retry) and isinstance(outcome, RetryAt)) or isinstance(
            outcome, Snoozed):
        # Asked for by the handler: not a failure worth a traceback.
        logger.info("job %s (%s) attempt %s: %s", job.id, job.name, job.attempt,
                    describe(outcome))
    else:
        logger.warning("job %s (%s) attempt %s failed: %s", job.id, job.name, job.attempt,
                       describe(outcome), exc_info=error)
    return outcome


def _cancelled(job: JobRecord, current: CurrentJob) -> Cancelled:
    if current._lease_lost:
        logger.debug("job %s (%s) attempt %s: stopped, its lease lost", job.id, job.name,
                     job.attempt)
    else:
        logger.warning("job %s (%s) attempt %s: cancelled on request", job.id, job.name,
                       job.attempt)
    return Cancelled()


async def _await_within(awaitable: Awaitable[object], handler: Handler,
                        timeout: timedelta) -> object:
    """Await an async handler, cancelling it once `timeout` has passed."""
    scope = asyncio.timeout(timeout.total_seconds())
    try:
        async with scope:
            return await awaitable
    except TimeoutError:
        if scope.expired():
            raise _timed_out(handler, timeout) from None
        raise  # the handler's own TimeoutError


async def _call_within(
    running: Awaitable[object], handler: Handler, timeout: timedelta,
    on_overrun: OnOverrun | None,
) -> object:
    """Wait for a sync handler's thread for up to `timeout`. Past it, the attempt fails;
    the thread cannot be stopped, so `on_overrun` learns of it."""
    future = asyncio.ensure_future(running)
    done, _ = await asyncio.wait({future}, timeout=timeout.total_seconds())
    if not done:
        if on_overrun is not None:
            on_overrun(future)
        raise _timed_out(handler, timeout)
    return future.result()
