"""`rota.current_job()`: which job the running handler works for, whether its cancel
was requested, and the progress it reports (`set_progress`).

A `contextvars.ContextVar` holds the `CurrentJob` while a handler runs. Async handlers see
it in their task's context; sync handlers run in a copy of that context on their Worker
thread (`contextvars.copy_context().run`), so they see it too, and threads a handler starts
itself see it if the handler copies the context into them.

Progress: the drive gives each CurrentJob its `ProgressWriter`. A report is checked and
paced (rota.core.progress.ProgressPacer: the first at once, then at most one a second);
a report due while the previous write is still under way waits. When the handler
returns, the drive awaits `flush_progress`: the write under way, then the last report if
it was held back, before the outcome is written (a progress write is fenced by the
lease, so after the outcome it would be refused). A handler that never reports costs one
attribute read per job.

Imports only the core.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable
from contextvars import ContextVar
from typing import Any, Protocol

from rota.core.clock import Clock, SystemClock
from rota.core.jobs import JobRecord, Lease
from rota.core.progress import Progress, ProgressPacer, check_progress

logger = logging.getLogger("rota")

_CURRENT: ContextVar[CurrentJob] = ContextVar("rota.current_job")


class ProgressWriter(Protocol):
    """How a drive writes the progress its handlers report."""

    @property
    def clock(self) -> Clock:
        """The clock a report's `at` is read from."""
        ...

    def write(self, lease: Lease, progress: Progress) -> Awaitable[None] | None:
        """Write `progress` (fenced by `lease`): done when this returns None, or still
        under way until the awaitable it returns is done. Never raises a store's error
        (logged: a progress write lost is no reason to fail the job)."""
        ...

    async def flush(self, lease: Lease, progress: Progress) -> None:
        """Write `progress` from the drive's event loop, awaited (never raises either)."""
        ...


class _Pacing:
    """One attempt's progress state, made at its first report."""

    __slots__ = ("in_flight", "latest", "lock", "pacer")

    def __init__(self) -> None:
        self.pacer = ProgressPacer()
        self.lock = threading.Lock()  # handlers' threads may report at once
        self.latest: Progress | None = None
        self.in_flight: Awaitable[None] | None = None


_PACING_LOCK = threading.Lock()  # makes one _Pacing per attempt


class CurrentJob:
    """The job a handler is running for (`rota.current_job()`): `id`, `name`, `queue`,
    `attempt` (1-based), `parents`, `meta` and `cancel_requested`; `set_progress` reports
    how far it got."""

    # Built once per job on the hot path: a few slots, the rest read through the record.
    __slots__ = ("_cancel_requested", "_job", "_lease_lost", "_pacing", "_writer")

    def __init__(self, job: JobRecord, writer: ProgressWriter | None = None) -> None:
        self._job = job
        self._writer = writer  # None: progress is kept here only, never written
        self._pacing: _Pacing | None = None  # made by the first set_progress
        # Written once (False -> True) by the worker's event loop, read by the handler,
        # possibly on another thread: a plain bool is enough under the GIL.
        self._cancel_requested = False
        # Set with it when the reason is a lease not renewed in time, not a cancel.
        self._lease_lost = False

    @property
    def id(self) -> int:
        """The job's id."""
        return self._job.id

    @property
    def name(self) -> str:
        """Its registered job name."""
        return self._job.name

    @property
    def queue(self) -> str:
        """Its Queue."""
        return self._job.queue

    @property
    def attempt(self) -> int:
        """This attempt's number, 1-based."""
        return self._job.attempt

    @property
    def parents(self) -> tuple[int, ...]:
        """The ids of the jobs this one was enqueued after (`configure(after=...)`), in the
        order given; () for a job without parents. Read a parent's result with
        `app.get_job(id).result` (retention keeps a parent while its child runs)."""
        return self._job.parents

    @property
    def meta(self) -> dict[str, Any]:
        """The job's meta (`configure(meta=...)`), a dict; {} for a job without any."""
        return self._job.meta

    @property
    def cancel_requested(self) -> bool:
        """True once a cancel of this job was requested (`app.cancel`, `rota cancel`) and
        delivered to this worker by a heartbeat, or once the worker could not renew the
        job's lease in time (the store did not answer). A sync handler should check it
        now and then and return when it turns True; the job then ends `cancelled`
        whatever the handler returns, or, for a lost lease, runs again once the lease
        expires (nothing is recorded for this attempt). (An async handler is cancelled
        instead.)"""
        return self._cancel_requested

    @property
    def progress(self) -> Progress | None:
        """What this attempt last reported with `set_progress`, None if nothing yet."""
        pacing = self._pacing
        return None if pacing is None else pacing.latest

    def set_progress(self, done: float, total: float | None = None, message: str = "") -> None:
        """Report how far the job got: `done` out of `total` (None: not known), with a short
        `message`. Readable at once by `app.get_job(id).progress`, `rota job`, `rota jobs`
        and the dashboard: the first report of an attempt is written to the store at once,
        then at most one a second (the others in between are dropped but the last, which
        is written when the handler returns). Call it as often as is convenient. From a
        sync handler the write, when one is due, happens in the call; an async handler's
        goes on in the background.

        Raises:
            TypeError: `done` or `total` not a number (int or float), `message` not a str.
            ValueError: a negative or non-finite number, `done` more than `total`, a
                message longer than 500 characters.
        """
        done, total, message = check_progress(done, total, message)
        writer = self._writer
        at = (SystemClock() if writer is None else writer.clock).now()
        progress = Progress(done, total, message, at)
        pacing = self._pacing
        if pacing is None:
            with _PACING_LOCK:
                if self._pacing is None:
                    self._pacing = _Pacing()
                pacing = self._pacing
        with pacing.lock:
            pacing.latest = progress
            if writer is None:
                return
            due = pacing.pacer.report(progress)
            if due is None:
                return
            in_flight = pacing.in_flight
            if in_flight is not None and not _done(in_flight):
                pacing.pacer.pending = due  # after the write under way: next time, or flushed
                return
            pacing.in_flight = writer.write(self._job.lease, due)

    def request_cancel(self, *, lease_lost: bool = False) -> None:
        """Mark the cancel request delivered (`lease_lost`: the worker stops the handler
        because its lease could not be renewed in time). Called by the worker, not by
        handlers."""
        self._lease_lost = lease_lost
        self._cancel_requested = True

    def __repr__(self) -> str:
        return (f"CurrentJob(id={self.id}, name={self.name!r}, queue={self.queue!r}, "
                f"attempt={self.attempt}, cancel_requested={self._cancel_requested})")


def _done(write: Awaitable[None]) -> bool:
    done = getattr(write, "done", None)
    return done is None or bool(done())


async def flush_progress(current: CurrentJob) -> None:
    """The drive's call once the handler returned, before its outcome is written: wait for
    the progress write under way, then write the last report if it was held back. Call
    it only when `current._pacing` is set (the handler reported)."""
    pacing = current._pacing
    writer = current._writer
    if pacing is None or writer is None:
        return
    with pacing.lock:
        in_flight, pacing.in_flight = pacing.in_flight, None
    if in_flight is not None:
        await in_flight
    with pacing.lock:
        pending = pacing.pacer.take_pending()
    if pending is not None:
        await writer.flush(current._job.lease, pending)


def current_job() -> CurrentJob:
    """The job the calling handler runs for.

    Raises:
        LookupError: outside a job handler (or in a thread the handler started without
            copying its context: `contextvars.copy_context().run(...)`).
    """
    try:
        return _CURRENT.get()
    except LookupError:
        raise LookupError(
            "rota.current_job() was called outside a job handler; it is only available "
            "while a handler runs (and in threads that run in a copy of its context)"
        ) from None
