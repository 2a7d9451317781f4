"""Outcome events: one value per finished job attempt, for metrics and monitoring.

`App.on_outcome(callback)` registers a callback; both drives (`run_until_idle` and the
real-time runtime) call it once per attempt, after the handler returned or raised.

Pure values; imports only the core.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import assert_never

from rota.core.jobs import JobEvent, JobRecord
from rota.core.outcomes import EndingEvent, Outcome, ending

logger = logging.getLogger("rota")


class OutcomeKind(Enum):
    """What became of one attempt."""

    SUCCEEDED = "succeeded"
    RETRIED = "retried"  # failed; scheduled again after a backoff
    DEAD_LETTERED = "dead_lettered"  # failed its last allowed attempt
    QUARANTINED = "quarantined"  # no handler for its job name; not run
    CANCELLED = "cancelled"  # its cancel was requested while it ran
    SNOOZED = "snoozed"  # raised rota.Snooze: scheduled again, the attempt not counted
    EXPIRED = "expired"  # due after its expires_at: ended cancelled by a claim, not run


@dataclass(frozen=True, slots=True)
class OutcomeEvent:
    """One finished attempt at a job.

    `duration` is measured on the App's clock (zero under a VirtualClock that nobody
    advances). `error` is `"TypeName: message"` for failures, None on success and on a
    snooze, `"Expired: not started by ..."` for an expired job (which did not run: its
    `started_at` and `finished_at` are both when the claim ended it, and its `attempt`
    is the count of attempts it had before). `retry_at` is when a retried or snoozed
    job is due again. The event says what the handler did; the store
    may still ignore the outcome if the lease was lost meanwhile (the job then runs again).
    """

    job_id: int
    job_name: str
    queue: str
    group: str
    attempt: int
    kind: OutcomeKind
    started_at: datetime
    finished_at: datetime
    error: str | None = None
    retry_at: datetime | None = None

    @property
    def duration(self) -> timedelta:
        return self.finished_at - self.started_at


OutcomeCallback = Callable[[OutcomeEvent], object]


def outcome_event(
    job: JobRecord, group: str, outcome: Outcome, started_at: datetime, finished_at: datetime
) -> OutcomeEvent:
    event, error, _trace, retry_at, _result = ending(outcome)
    return OutcomeEvent(
        job_id=job.id, job_name=job.name, queue=job.queue, group=group, attempt=job.attempt,
        kind=kind_of(event), started_at=started_at, finished_at=finished_at, error=error,
        retry_at=retry_at,
    )


def kind_of(event: EndingEvent) -> OutcomeKind:
    """The OutcomeKind of an outcome, by the event that ends its lease."""
    match event:
        case JobEvent.COMPLETE:
            return OutcomeKind.SUCCEEDED
        case JobEvent.RETRY:
            return OutcomeKind.RETRIED
        case JobEvent.DEAD_LETTER:
            return OutcomeKind.DEAD_LETTERED
        case JobEvent.QUARANTINE:
            return OutcomeKind.QUARANTINED
        case JobEvent.CANCEL:
            return OutcomeKind.CANCELLED
        case JobEvent.SNOOZE:
            return OutcomeKind.SNOOZED
        case JobEvent.EXPIRE:
            return OutcomeKind.EXPIRED
        case _:
            assert_never(event)


def emit(callbacks: Sequence[OutcomeCallback], event: OutcomeEvent) -> None:
    """Call every callback; one that raises is logged and never stops the worker."""
    for callback in callbacks:
        try:
            callback(event)
        except Exception:
            logger.warning("on_outcome callback %r raised; ignored", callback, exc_info=True)
