"""Outcomes: what became of one attempt at a job, decided without I/O.

The worker runs a handler, then asks this module what to record; the store records it.
Pure: takes `now` as an argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, assert_never

from rota.core.jobs import CANCELLED_ON_REQUEST, JobEvent
from rota.core.retry import DeadLetter, RetryPolicy, exponential_backoff

MAX_ERROR_LENGTH = 2000
# The most a stored traceback holds, in UTF-8 bytes: the end of a longer one is kept
# (the innermost frames and the exception itself are what a reader needs).
MAX_TRACEBACK_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class Succeeded:
    result_json: str | None = None  # the handler's return value as JSON; None for None


@dataclass(frozen=True, slots=True)
class RetryAt:
    due_at: datetime
    error: str
    traceback: str | None = None  # the formatted traceback of the exception, if one


@dataclass(frozen=True, slots=True)
class DeadLettered:
    error: str
    traceback: str | None = None
    # True when the RetryPolicy refused to retry this error with attempts left (its
    # `give_up_on`, `retry_on`): `error` then says why; False when the attempts ran out.
    given_up: bool = False


@dataclass(frozen=True, slots=True)
class Quarantined:
    error: str


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The job's cancel was requested while it ran, and its worker acted on it."""

    error: str = CANCELLED_ON_REQUEST


@dataclass(frozen=True, slots=True)
class Snoozed:
    """The handler raised `rota.Snooze`: scheduled again at `due_at`, the attempt not
    counted. `reason` is for the log only (a snooze writes no error)."""

    due_at: datetime
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Expired:
    """A claim found the job due after its `expires_at` and ended it cancelled instead of
    leasing it: no handler ran. Not a lease's ending (the claim already wrote it), so no
    store call takes it; it is reported as every outcome is (logs, `on_outcome`,
    metrics)."""

    error: str


Outcome = Succeeded | RetryAt | DeadLettered | Quarantined | Cancelled | Snoozed | Expired

# The lifecycle event that ends a lease, one per outcome kind (EXPIRE: the claim ended a
# job it did not lease).
EndingEvent = Literal[JobEvent.COMPLETE, JobEvent.RETRY, JobEvent.DEAD_LETTER,
                      JobEvent.QUARANTINE, JobEvent.CANCEL, JobEvent.SNOOZE,
                      JobEvent.EXPIRE]
# (event, error, traceback, due_at, result_json): what a store writes for an outcome. A
# plain tuple, since it is built once per job written.
Ending = tuple[EndingEvent, str | None, str | None, datetime | None, str | None]


def ending(outcome: Outcome) -> Ending:
    """What `outcome` asks a store to write: the event that ends the lease and the fields
    it records (None: not written). The one mapping of outcome kinds to store writes: the
    memory and SQL stores and the worker's writer all read it, and each matches the event
    exhaustively, so a new outcome kind is a mypy error (`assert_never`) in every place
    it must be taught to, never a silent quarantine. At run time an object of no known
    kind raises AssertionError."""
    match outcome:
        case Succeeded():
            return (JobEvent.COMPLETE, None, None, None, outcome.result_json)
        case RetryAt():
            return (JobEvent.RETRY, outcome.error, outcome.traceback, outcome.due_at, None)
        case DeadLettered():
            return (JobEvent.DEAD_LETTER, outcome.error, outcome.traceback, None, None)
        case Quarantined():
            return (JobEvent.QUARANTINE, outcome.error, None, None, None)
        case Cancelled():
            return (JobEvent.CANCEL, outcome.error, None, None, None)
        case Snoozed():
            return (JobEvent.SNOOZE, None, None, outcome.due_at, None)
        case Expired():
            return (JobEvent.EXPIRE, outcome.error, None, None, None)
        case _:
            assert_never(outcome)


def describe_error(error: BaseException) -> str:
    """`TypeName: message`, trimmed to a size a store column holds comfortably, with NUL
    characters and lone surrogates written as escapes (`\\x00`, `\\udc80`)."""
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    text = text if len(text) <= MAX_ERROR_LENGTH else text[: MAX_ERROR_LENGTH - 3] + "..."
    return text if text.isprintable() else _storable(text)


def _storable(text: str) -> str:
    """`text` with NUL and lone surrogates written as escapes: every store must save it,
    and PostgreSQL refuses NUL in text while no store can encode a lone surrogate."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode()


def bound_traceback(text: str) -> str:
    """A formatted traceback as every store keeps it: escaped as `describe_error` escapes
    (NUL, lone surrogates), and at most `MAX_TRACEBACK_BYTES` of UTF-8. A longer one keeps
    its end, from a line start when one is near, after a first line saying how much of
    the start was cut."""
    text = _storable(text)
    if len(text) * 4 <= MAX_TRACEBACK_BYTES:  # short enough whatever its characters
        return text
    data = text.encode()
    if len(data) <= MAX_TRACEBACK_BYTES:
        return text
    # The marker's length with the largest count it can show; the real count is smaller.
    room = MAX_TRACEBACK_BYTES - len(_cut_marker(len(data)).encode())
    tail = data[len(data) - room:]
    newline = tail.find(b"\n", 0, 1024)
    if newline >= 0:
        tail = tail[newline + 1:]
    kept = tail.decode(errors="ignore")  # a character cut in two at the start goes
    return _cut_marker(len(data) - len(kept.encode())) + kept


def _cut_marker(cut_bytes: int) -> str:
    return f"[the first {cut_bytes} bytes of this traceback were cut]\n"


def after_failure(
    attempt: int, error: str, policy: RetryPolicy, now: datetime,
    *, exception: BaseException | None = None, job_id: int = 0,
    traceback: str | None = None,
) -> Outcome:
    """Retry with backoff, or dead-letter once `attempt` reaches `policy.max_attempts`, or
    at once when `exception` is one the policy does not retry (`retry_on`, `give_up_on`).
    `error` is the text to record and `traceback` the formatted traceback to record with
    it (None: none); `job_id` seeds the policy's jitter."""
    decision = policy.decide(attempt, exception, job_id=job_id)
    if isinstance(decision, DeadLetter):
        if decision.reason is None:
            return DeadLettered(error, traceback)
        return DeadLettered(f"{error} ({decision.reason})", traceback, given_up=True)
    if decision.backoff_error is not None:
        error = (f"{error} (the RetryPolicy's backoff failed: {decision.backoff_error}; "
                 "retried on the default backoff)")
    try:
        return RetryAt(now + decision.delay, error, traceback)
    except OverflowError:  # a delay past year 9999
        return RetryAt(now + exponential_backoff(attempt),
                       f"{error} (backoff too long; retried on the default backoff)", traceback)


def describe(outcome: Outcome) -> str:
    """The outcome in a few words, for logs: 'succeeded', 'retry at ...', ..."""
    match outcome:
        case Succeeded():
            return "succeeded"
        case RetryAt():
            return f"{outcome.error}; retry at {outcome.due_at.isoformat(timespec='seconds')}"
        case DeadLettered():
            # One reason: the policy's, already in the error, or the attempts running out.
            if outcome.given_up:
                return f"{outcome.error}; dead-lettered"
            return f"{outcome.error}; dead-lettered (no attempts left)"
        case Cancelled():
            return "cancelled on request"
        case Quarantined():
            return f"{outcome.error}; quarantined"
        case Snoozed():
            until = outcome.due_at.isoformat(timespec="seconds")
            return f"snoozed until {until}" + (f": {outcome.reason}" if outcome.reason else "")
        case Expired():
            return f"{outcome.error}; cancelled unrun"
        case _:
            assert_never(outcome)


def unknown_job(name: str) -> Quarantined:
    return Quarantined(
        f"UnknownJob: no handler is registered for job name {name!r}; register it with "
        "@app.job(...) in the App that runs this Queue, then requeue the job"
    )
