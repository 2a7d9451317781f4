"""`rota.current_job()`: which job the running handler works for, and whether its cancel
was requested.

A `contextvars.ContextVar` holds the `CurrentJob` while a handler runs. Async handlers see
it in their task's context; sync handlers run in a copy of that context on their Worker
thread (`contextvars.copy_context().run`), so they see it too, and threads a handler starts
itself see it if the handler copies the context into them.

Imports only the core.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from rota.core.jobs import JobRecord

_CURRENT: ContextVar[CurrentJob] = ContextVar("rota.current_job")


class CurrentJob:
    """The job a handler is running for (`rota.current_job()`): `id`, `name`, `queue`,
    `attempt` (1-based), `parents`, `meta` and `cancel_requested`."""

    # Built once per job on the hot path: two slots, the rest read through the record.
    __slots__ = ("_cancel_requested", "_job", "_lease_lost")

    def __init__(self, job: JobRecord) -> None:
        self._job = job
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

    def request_cancel(self, *, lease_lost: bool = False) -> None:
        """Mark the cancel request delivered (`lease_lost`: the worker stops the handler
        because its lease could not be renewed in time). Called by the worker, not by
        handlers."""
        self._lease_lost = lease_lost
        self._cancel_requested = True

    def __repr__(self) -> str:
        return (f"CurrentJob(id={self.id}, name={self.name!r}, queue={self.queue!r}, "
                f"attempt={self.attempt}, cancel_requested={self._cancel_requested})")


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
