"""Outcomes: what became of one attempt at a job, decided without I/O.

The worker runs a handler, then asks this module what to record; the store records it.
Pure: takes `now` as an argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rota.core.jobs import CANCELLED_ON_REQUEST
from rota.core.retry import DeadLetter, RetryPolicy, exponential_backoff

MAX_ERROR_LENGTH = 2000


@dataclass(frozen=True, slots=True)
class Succeeded:
    result_json: str | None = None  # the handler's return value as JSON; None for None


@dataclass(frozen=True, slots=True)
class RetryAt:
    due_at: datetime
    error: str


@dataclass(frozen=True, slots=True)
class DeadLettered:
    error: str


@dataclass(frozen=True, slots=True)
class Quarantined:
    error: str


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The job's cancel was requested while it ran, and its worker acted on it."""

    error: str = CANCELLED_ON_REQUEST


Outcome = Succeeded | RetryAt | DeadLettered | Quarantined | Cancelled


def describe_error(error: BaseException) -> str:
    """`TypeName: message`, trimmed to a size a store column holds comfortably, with NUL
    characters and lone surrogates written as escapes (`\\x00`, `\\udc80`)."""
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    text = text if len(text) <= MAX_ERROR_LENGTH else text[: MAX_ERROR_LENGTH - 3] + "..."
    if not text.isprintable():
        # Every store must save it: PostgreSQL refuses NUL in text, and no store can
        # encode a lone surrogate as UTF-8. Both are written as escapes instead.
        text = text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode()
    return text


def after_failure(
    attempt: int, error: str, policy: RetryPolicy, now: datetime,
    *, exception: BaseException | None = None, job_id: int = 0,
) -> Outcome:
    """Retry with backoff, or dead-letter once `attempt` reaches `policy.max_attempts`, or
    at once when `exception` is one the policy does not retry (`retry_on`, `give_up_on`).
    `error` is the text to record; `job_id` seeds the policy's jitter."""
    decision = policy.decide(attempt, exception, job_id=job_id)
    if isinstance(decision, DeadLetter):
        return DeadLettered(error if decision.reason is None else f"{error} ({decision.reason})")
    if decision.backoff_error is not None:
        error = (f"{error} (the RetryPolicy's backoff failed: {decision.backoff_error}; "
                 "retried on the default backoff)")
    try:
        return RetryAt(now + decision.delay, error)
    except OverflowError:  # a delay past year 9999
        return RetryAt(now + exponential_backoff(attempt),
                       f"{error} (backoff too long; retried on the default backoff)")


def describe(outcome: Outcome) -> str:
    """The outcome in a few words, for logs: 'succeeded', 'retry at ...', ..."""
    if isinstance(outcome, Succeeded):
        return "succeeded"
    if isinstance(outcome, RetryAt):
        return f"{outcome.error}; retry at {outcome.due_at.isoformat(timespec='seconds')}"
    if isinstance(outcome, DeadLettered):
        return f"{outcome.error}; dead-lettered (no attempts left)"
    if isinstance(outcome, Cancelled):
        return "cancelled on request"
    return f"{outcome.error}; quarantined"


def unknown_job(name: str) -> Quarantined:
    return Quarantined(
        f"UnknownJob: no handler is registered for job name {name!r}; register it with "
        "@app.job(...) in the App that runs this Queue, then requeue the job"
    )
