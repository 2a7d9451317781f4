"""Suspects: jobs whose last attempt ended with an expired lease.

A lease expires when its worker stopped heartbeating: the process was killed (SIGKILL, a
segfault, the OOM killer, `os._exit` in a handler) or lost the store for longer than a
lease. From the store alone nobody can tell which job of a dead process killed it, so
every job that was in flight there becomes a *suspect*, and the runtime runs a suspect
alone (nothing else running or starting in its process, every pending outcome written
first): if it kills the process again, it dies alone, and its neighbours are not charged.

The reason is recorded where every store already keeps it, in `last_error` (no schema
change): the lease sweeper writes `lease_expired_error(owner)`, and `is_suspect` reads it
back. An attempt that ends any other way overwrites `last_error` (or finishes the job), so
a job stops being a suspect as soon as one attempt of it ends normally.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from rota.core.jobs import JobRecord

LEASE_EXPIRED = "LeaseExpired"
_PREFIX = f"{LEASE_EXPIRED}: worker "


def lease_expired_error(owner: str | None) -> str:
    """The `last_error` the lease sweeper records for a lease that expired under `owner`."""
    return f"{_PREFIX}{owner} stopped heartbeating"


def is_suspect(job: JobRecord) -> bool:
    """Whether `job`'s previous attempt ended with an expired lease (see module doc)."""
    error = job.last_error
    return error is not None and error.startswith(_PREFIX)
