"""Jobs: the records a store keeps, their states, and the table of legal state changes.

Theory of operation: a job enqueued after other jobs (its parents) is `waiting` until they
have finished, then `scheduled`, or `cancelled` (rota.core.workflows). A job is
`scheduled` until a claim leases it (`leased`, attempt + 1). A lease ends in exactly one
outcome: `succeeded`, back to `scheduled` (retry with a new due time, or released
unstarted at shutdown), `dead_lettered` or `quarantined`. A scheduled or waiting job can be
`cancelled`; a leased one gets a cancel request (`cancel_requested`) and ends `cancelled`
when its worker acts on it. A job with a cancel request never goes back to `scheduled`: a
retry, a release or an expired lease of it ends it `cancelled` instead. A
`dead_lettered`, `quarantined` or `cancelled` job can be requeued (`scheduled`, attempt 0).
Every store applies `TRANSITIONS`, in Python or as SQL `WHERE` clauses; the contract suite
checks they agree.

Pure: no I/O, no clock. Arguments are JSON, encoded and checked here before anything is
stored, so a bad argument never half-writes a job.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, make_dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from functools import lru_cache
from operator import attrgetter
from typing import Any, TypeVar

from rota.core.meta import check_meta_json
from rota.core.progress import AttemptError, Progress
from rota.core.queues import MAX_QUEUE_NAME_LENGTH, validate_queue_name

JsonValue = Any  # what json.loads returns; kept opaque on purpose


class JobState(Enum):
    WAITING = "waiting"
    SCHEDULED = "scheduled"
    LEASED = "leased"
    SUCCEEDED = "succeeded"
    DEAD_LETTERED = "dead_lettered"
    QUARANTINED = "quarantined"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in FINISHED_STATES


FINISHED_STATES = frozenset(
    {JobState.SUCCEEDED, JobState.DEAD_LETTERED, JobState.QUARANTINED, JobState.CANCELLED}
)


class JobEvent(Enum):
    CLAIM = "claim"
    COMPLETE = "complete"
    RETRY = "retry"
    RELEASE = "release"
    DEAD_LETTER = "dead_letter"
    QUARANTINE = "quarantine"
    CANCEL = "cancel"
    REQUEUE = "requeue"
    PARENTS_DONE = "parents_done"
    SNOOZE = "snooze"
    EXPIRE = "expire"


TRANSITIONS: Mapping[tuple[JobState, JobEvent], JobState] = {
    # A workflow job waits until its parents have finished (rota.core.workflows), then is
    # scheduled in the transaction that finished its last parent; a parent that failed
    # under after_outcome="succeeded", or a cancel, ends it cancelled.
    (JobState.WAITING, JobEvent.PARENTS_DONE): JobState.SCHEDULED,
    (JobState.WAITING, JobEvent.CANCEL): JobState.CANCELLED,
    (JobState.SCHEDULED, JobEvent.CLAIM): JobState.LEASED,
    (JobState.SCHEDULED, JobEvent.CANCEL): JobState.CANCELLED,
    # A due job past its `expires_at`: the claim that finds it ends it instead of leasing.
    (JobState.SCHEDULED, JobEvent.EXPIRE): JobState.CANCELLED,
    (JobState.LEASED, JobEvent.COMPLETE): JobState.SUCCEEDED,
    (JobState.LEASED, JobEvent.RETRY): JobState.SCHEDULED,
    (JobState.LEASED, JobEvent.RELEASE): JobState.SCHEDULED,
    # `rota.Snooze`: back to scheduled, the attempt not counted (as a release).
    (JobState.LEASED, JobEvent.SNOOZE): JobState.SCHEDULED,
    (JobState.LEASED, JobEvent.DEAD_LETTER): JobState.DEAD_LETTERED,
    (JobState.LEASED, JobEvent.QUARANTINE): JobState.QUARANTINED,
    # A leased job's cancel request acted on by its worker (or by a retry, a release or a
    # lease expiry of that job: it never goes back to scheduled).
    (JobState.LEASED, JobEvent.CANCEL): JobState.CANCELLED,
    (JobState.DEAD_LETTERED, JobEvent.REQUEUE): JobState.SCHEDULED,
    (JobState.QUARANTINED, JobEvent.REQUEUE): JobState.SCHEDULED,
    (JobState.CANCELLED, JobEvent.REQUEUE): JobState.SCHEDULED,
}

# The states `requeue` takes a job from.
REQUEUEABLE_STATES = frozenset(
    state for (state, event) in TRANSITIONS if event is JobEvent.REQUEUE
)

# `last_error` of a job that ended cancelled because its cancel was requested while leased.
CANCELLED_ON_REQUEST = "Cancelled: cancelled on request while it ran (app.cancel / rota cancel)"
# `last_error` of a scheduled or waiting job cancelled on request (it never ran then).
CANCELLED_BEFORE_RUN = "Cancelled on request"


def expired_error(expires_at: datetime) -> str:
    """`last_error` of a job a claim found past its `expires_at` (ended cancelled), the
    time in UTC to the second (rounded down), as every store writes it."""
    return f"Expired: not started by {expires_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def is_expired(expires_at: datetime | None, now: datetime) -> bool:
    """Whether an attempt starting at `now` would start after `expires_at` (None: the job
    never expires). An attempt at exactly `expires_at` still starts."""
    return expires_at is not None and now > expires_at


def check_requeueable(state: JobState) -> JobState:
    """`state`, if jobs in it can be requeued.

    Raises:
        ValueError: naming the states that can.
    """
    if state not in REQUEUEABLE_STATES:
        names = ", ".join(sorted(s.value for s in REQUEUEABLE_STATES))
        raise ValueError(f"only {names} jobs can be requeued; got state {state.value!r}")
    return state


class InvalidTransition(Exception):
    """A state change the table does not allow."""


def transition(state: JobState, event: JobEvent) -> JobState:
    """The state after `event` in `state`.

    Raises:
        InvalidTransition: if the table has no such change.
    """
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise InvalidTransition(f"a {state.value} job cannot {event.value}") from None


# Every store keeps job ids as 64-bit signed integers: no job has an id outside 1..MAX_JOB_ID
# (SQLite cannot even compare with a larger Python int: it raises OverflowError).
MAX_JOB_ID = 2**63 - 1


@dataclass(frozen=True, slots=True)
class JobRecord:
    """A job as the store holds it.

    Attributes:
        last_error: why the last attempt failed (`TypeName: message`), or why the job was
            cancelled or quarantined; None if none. Cleared by a requeue.
        last_traceback: the formatted traceback of the exception behind `last_error`, of
            the last failed attempt: at most 16 KiB of UTF-8, the end kept after a first
            line saying how much of the start was cut. None for a job that never failed,
            or whose last error came from no exception (an expired lease, a quarantine, a
            cancel, a `rota.Retry`). Cleared by a requeue.
        finished_at: when the job reached a finished state; None while it is not in one.
        started_at: when its last attempt started (its claim).
        progress: what the handler last reported (`Progress`), None if nothing yet.
        errors: every failed attempt (`AttemptError`), the last 20, oldest first.
        worker: the id of the worker that ran the last attempt, as `rota workers` lists it.
    """

    id: int
    name: str
    queue: str
    state: JobState
    attempt: int
    due_at: datetime
    args: tuple[JsonValue, ...] = ()
    kwargs: dict[str, JsonValue] = field(default_factory=dict)
    last_error: str | None = None
    created_at: datetime | None = None
    finished_at: datetime | None = None  # set by every change into a finished state
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    # When the last attempt started (its claim), the handler's JSON return value of a
    # succeeded job, and whether a cancel was requested while it was leased.
    started_at: datetime | None = None
    result: JsonValue = None
    cancel_requested: bool = False
    # Set when the row's stored arguments cannot be decoded (corrupted outside rota): then
    # `args` is () and `kwargs` {}, and this says why. A claim quarantines such a job.
    arguments_error: str | None = None
    # Unique jobs: the key it was enqueued with (None: none). Read paths (get_job,
    # list_jobs) fill it on every store; the durable stores' claims leave it None (the
    # worker does not need it to run the job).
    key: str | None = None
    # The enqueuing span's trace context (NewJob.trace_context); set on claimed records.
    trace_context: str | None = None
    # The formatted traceback that goes with `last_error` when the handler raised it (at
    # most 16 KiB, its end kept); None for a job that never failed, or whose last error
    # came from no exception (an expired lease, say). Read paths fill it on every store;
    # the durable stores' claims leave it None (running the job does not need it).
    last_traceback: str | None = None
    # Workflows: the ids of the jobs this one was enqueued after (`configure(after=...)`),
    # in the order given; () for a job without parents. Filled by every read and claim.
    parents: tuple[int, ...] = ()
    # The job's meta (`configure(meta=...)`, rota.core.meta): a JSON object, {} for none.
    # Filled by every read and claim.
    meta: dict[str, JsonValue] = field(default_factory=dict)
    # `rota.Snooze`: how many times its handler snoozed it (each attempt it did so was
    # not counted in `attempt`). Cleared by a requeue.
    snoozes: int = 0
    # `configure(expires=...)`: no attempt starts after this instant; a claim that finds
    # it due later ends it cancelled ("Expired: ..."). None: it never expires. Cleared
    # by a requeue (a requeued job is a fresh run).
    expires_at: datetime | None = None
    # What the handler last reported (`rota.current_job().set_progress`), None if nothing
    # yet; a claim clears it (a new attempt reports anew) and so does a requeue.
    progress: Progress | None = None
    # Every failed attempt (retried, dead-lettered, quarantined, its lease expired), the
    # last MAX_KEPT_ERRORS, oldest first; () for a job that never failed. Kept by a requeue.
    errors: tuple[AttemptError, ...] = ()
    # The id of the worker that ran the last attempt (`rota workers` lists it; under
    # `run_until_idle`, the drive's own id); None for a job never claimed. Kept after the
    # job finishes.
    worker: str | None = None
    # Workflows: what a job with parents waits for (`configure(after_outcome=...)`:
    # "succeeded" or "finished"); None for a job without parents. Filled by every read;
    # the durable stores' claims leave it None.
    after_outcome: str | None = None

    @property
    def lease(self) -> Lease:
        """The lease this record was claimed under.

        Raises:
            ValueError: if the job is not leased.
        """
        if self.lease_owner is None:
            raise ValueError(f"job {self.id} is {self.state.value}, not leased")
        return _new_lease(self.id, self.lease_owner, self.attempt)

    @property
    def last_attempt_duration(self) -> timedelta | None:
        """How long the last attempt ran, from its claim (`started_at`) to `finished_at`;
        None when not known: not finished (a retried job records no end of its attempt),
        never started, or cancelled while it waited (no attempt ended then)."""
        if self.started_at is None or self.finished_at is None:
            return None
        if self.state is JobState.CANCELLED and not self.cancel_requested:
            return None  # cancelled while scheduled: `started_at` is an older attempt's
        if self.finished_at < self.started_at:
            return None
        return self.finished_at - self.started_at


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a job, and for which attempt: every outcome is fenced by both."""

    job_id: int
    owner: str
    attempt: int


_Frozen = TypeVar("_Frozen")


def _positional_constructor(cls: type[_Frozen]) -> Callable[..., _Frozen]:
    """A constructor of the frozen, slotted dataclass `cls` for hot paths: every field
    given positionally, in declaration order, no defaults. What it returns is an ordinary
    `cls` instance (frozen, equal to `cls(...)` of the same values).

    A frozen dataclass's `__init__` sets each field through `object.__setattr__`; building
    an unfrozen twin with the same slots and then switching its class is several times
    cheaper, and the stores build a JobRecord once per claimed job. The twin is filled by
    one generated function, as dataclasses generate `__init__`."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    twin = make_dataclass(f"_Unfrozen{cls.__name__}", names,
                          slots=True, eq=False, repr=False, match_args=False)
    # Field names are identifiers (a dataclass's): the text below is code we wrote.
    text = (f"def build({', '.join(names)}):\n    built = _new(_twin)\n"
            + "".join(f"    built.{name} = {name}\n" for name in names)
            + "    built.__class__ = _cls\n    return built\n")
    namespace: dict[str, Any] = {"_new": object.__new__, "_twin": twin, "_cls": cls}
    exec(text, namespace)
    build: Callable[..., _Frozen] = namespace["build"]
    build.__qualname__ = f"new_{cls.__name__}"
    return build


# `JobRecord(...)` with all 28 fields positionally, in declaration order (see above).
new_record: Callable[..., JobRecord] = _positional_constructor(JobRecord)
_new_lease: Callable[[int, str, int], Lease] = _positional_constructor(Lease)


@dataclass(frozen=True, slots=True)
class NewJob:
    """A job about to be enqueued, its arguments already encoded as JSON text."""

    name: str
    queue: str
    due_at: datetime
    args_json: str = "[]"
    kwargs_json: str = "{}"
    # Unique jobs: while a job of the same name and key is live (scheduled or leased),
    # enqueueing this one stores nothing and answers that job's id. None: no key.
    key: str | None = None
    # W3C trace context (JSON of the propagator's carrier) of the span the enqueue ran in;
    # None outside a span or without OpenTelemetry (rota.worker.tracing).
    trace_context: str | None = None
    # Debounce (needs a key; the key is then not a unique key, above): while a job of the
    # same name and key is scheduled and has never been claimed, enqueueing this one
    # stores no new job but gives that job this job's arguments and due_at, the due time
    # capped at that job's created_at + max_wait (None: no cap). Once claimed, that job
    # no longer collects enqueues: this one makes a new job.
    debounced: bool = False
    max_wait: timedelta | None = None
    # Workflows: the ids of existing jobs this one runs after (distinct, in the order
    # given); while any has not finished it is `waiting`. `after_outcome` "succeeded": it
    # runs once all succeeded, and is cancelled if one ends otherwise; "finished": it runs
    # once all finished, whatever happened (rota.core.workflows).
    parents: tuple[int, ...] = ()
    after_outcome: str = "succeeded"
    # The job's meta as JSON object text (rota.core.meta.encode_meta); None: none.
    meta_json: str | None = None
    # No attempt starts after this instant (timezone-aware; None: never expires): a
    # claim ends it cancelled instead (`expired_error`). One already past is stored all
    # the same, and ends so at its first claim.
    expires_at: datetime | None = None


# The most encoded JSON (UTF-8 bytes) a job's arguments, or its result, may take: the
# default of `rota.App(max_payload_bytes=...)`.
DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024


class PayloadTooLarge(ValueError):
    """A job's arguments or result encode to more JSON than the App's `max_payload_bytes`."""


def _check_size(what: str, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise PayloadTooLarge(
            f"{what} as JSON: {size:,} bytes, over the limit of {max_bytes:,} bytes (the "
            "setting rota.App(..., max_payload_bytes=N)); keep large data elsewhere (a file, "
            "a table, object storage) and pass its id, or raise the limit"
        )


# The same bound as for Queue names: every store keeps names this long alike, and they
# stay readable in tables, logs and metric labels.
MAX_JOB_NAME_LENGTH = MAX_QUEUE_NAME_LENGTH


def validate_job_name(name: object) -> str:
    """Return `name` if it is a valid job name.

    A job name is 1 to 200 printable characters: spaces are allowed; control characters
    (NUL, newline, tab, ...), other separators and lone surrogates are not, so that every
    store saves the same names (PostgreSQL refuses NUL in text).

    Raises:
        TypeError: if `name` is not a str.
        ValueError: if it is empty, too long, or holds a character that is not printable.
    """
    if not isinstance(name, str):
        raise TypeError(f"a job name must be a str; got {name!r} ({type(name).__name__})")
    return _checked_job_name(name)


@lru_cache(maxsize=1024)  # stores check every batch's names: most are seen before
def _checked_job_name(name: str) -> str:
    return check_printable_name(name, "a job name", MAX_JOB_NAME_LENGTH)


def check_printable_name(name: str, what: str, max_length: int, too_long_hint: str = "") -> str:
    """The rule for the names users give (job names, unique keys, schedule names): 1 to
    `max_length` printable characters, spaces allowed. `what` names it in the errors
    ("a job name"); `too_long_hint` ends the too-long error with what to do.

    Raises:
        ValueError: if `name` is empty, too long, or holds a character that is not printable.
    """
    if not name:
        raise ValueError(f"{what} must be non-empty; got ''")
    if len(name) > max_length:
        raise ValueError(
            f"{what} must be at most {max_length} characters; "
            f"got {len(name)} ({name[:20]!r}...){too_long_hint}"
        )
    if not name.isprintable():
        raise ValueError(
            f"{what} must not contain control characters (NUL, newline, tab, ...); "
            f"got {name!r}"
        )
    return name


# Unique jobs: the states in which a job holds its key (the stores' unique index covers
# exactly these); a job that leaves them frees the key.
LIVE_STATES = frozenset({JobState.SCHEDULED, JobState.LEASED})
MAX_JOB_KEY_LENGTH = 200


def validate_job_key(key: object) -> str:
    """Return `key` if it is a valid unique-job key: a str of 1 to 200 printable
    characters (spaces allowed), like a job name.

    Raises:
        ValueError: for anything else (a key that is not a str included).
    """
    if not isinstance(key, str):
        raise ValueError(
            f"a job key must be a str of 1 to {MAX_JOB_KEY_LENGTH} printable characters; got "
            f"{key!r} ({type(key).__name__}). Use str(...) of your id, e.g. key=f'order-{{id}}'"
        )
    return _checked_job_key(key)


@lru_cache(maxsize=1024)
def _checked_job_key(key: str) -> str:
    return check_printable_name(
        key, "a job key", MAX_JOB_KEY_LENGTH,
        "; hash a longer identity (e.g. hashlib.sha256(...).hexdigest())",
    )


# Workflows: what a child waits for. "succeeded": every parent succeeded (one that ends
# otherwise cancels the child); "finished": every parent finished, whatever happened.
AFTER_OUTCOMES = ("succeeded", "finished")


def check_after_outcome(after_outcome: object) -> str:
    """`after_outcome` if it is one of `AFTER_OUTCOMES`.

    Raises:
        ValueError: naming the two choices.
    """
    if not isinstance(after_outcome, str) or after_outcome not in AFTER_OUTCOMES:
        raise ValueError(
            f"after_outcome must be 'succeeded' (run once every parent succeeded; the "
            f"default) or 'finished' (run once every parent finished, whatever happened); "
            f"got {after_outcome!r}"
        )
    return after_outcome


def check_parent_ids(parents: object) -> tuple[int, ...]:
    """The parent job ids `after=` names, as a tuple: distinct, in the order given (a
    repeated id counts once).

    Raises:
        TypeError: if `parents` is not an iterable of ints (a single id, a str), or holds
            something else (a bool, a float, None).
        ValueError: for an id outside 1..MAX_JOB_ID (no job has one).
    """
    if isinstance(parents, int | str | bytes) or not hasattr(parents, "__iter__"):
        raise TypeError(
            f"after= takes a list of job ids, e.g. after=[job_id]; got {parents!r} "
            f"({type(parents).__name__})"
        )
    ids: dict[int, None] = {}
    for parent in parents:
        if isinstance(parent, bool) or not isinstance(parent, int):
            raise TypeError(
                f"after= holds {parent!r} ({type(parent).__name__}); it takes job ids (int), "
                "as enqueue() returns them"
            )
        if not 1 <= parent <= MAX_JOB_ID:
            raise ValueError(f"after= holds {parent}, which is no job's id (ids are 1 or more)")
        ids[parent] = None
    return tuple(ids)


def check_job_parents(job: NewJob) -> None:
    """Refuse a job's parents that no store can take (see `check_new_jobs`).

    Raises:
        ValueError: a bad `after_outcome`, a repeated or impossible parent id, or parents
            together with a key (unique and debounced jobs cannot wait for parents).
    """
    check_after_outcome(job.after_outcome)
    if not job.parents:
        return
    if job.key is not None:
        raise ValueError(
            f"job {job.name!r}: a job enqueued after other jobs (after=) cannot have a key "
            "(unique or debounced); enqueue the keyed job from the last parent's handler "
            "instead"
        )
    if check_parent_ids(job.parents) != job.parents:
        raise ValueError(f"job {job.name!r}: its parents repeat an id: {job.parents!r}")


def check_new_jobs(jobs: Sequence[NewJob]) -> None:
    """Refuse a batch that some store could not save as it is, before any store writes it:
    every store calls this first in `enqueue`, so that all of them accept and refuse the
    same jobs (all or none of a batch).

    Raises:
        ValueError: a job or Queue name, or a key, breaks its rule (`validate_job_name`,
            `validate_queue_name`, `validate_job_key`).
        TypeError: a job's encoded arguments hold a NUL character; its meta text is not
            a JSON object (rota.core.meta).
    """
    # A batch has few distinct names; 0.3-0.6 µs a job in all, against 12 µs a job for
    # the SQLite enqueue itself (5,000-job batches).
    for name, queue in {(job.name, job.queue) for job in jobs}:
        validate_job_name(name)
        validate_queue_name(queue)
    for key in {job.key for job in jobs}:
        if key is not None:
            validate_job_key(key)
    if any(map(_DEBOUNCED, jobs)) or any(map(_MAX_WAIT, jobs)):
        for job in jobs:
            if job.debounced and job.key is None:
                raise ValueError(f"job {job.name!r}: a debounced job needs a key")
            if job.max_wait is not None and not job.debounced:
                raise ValueError(f"job {job.name!r}: max_wait applies to a debounced job only")
    # "\n" cannot be part of the escape, so no false match forms across two texts.
    if any(map(_PARENTS, jobs)):
        for job in jobs:
            check_job_parents(job)
    if any(map(_META_JSON, jobs)):
        for job in jobs:
            if job.meta_json is not None:
                check_meta_json(job.meta_json)
    if any(map(_EXPIRES_AT, jobs)):
        for job in jobs:
            if job.expires_at is not None and job.expires_at.utcoffset() is None:
                raise ValueError(
                    f"job {job.name!r}: expires_at must be a timezone-aware datetime; got "
                    f"{job.expires_at!r} (e.g. datetime.now(timezone.utc) + timedelta(...))")
    if _NUL_ESCAPE in "\n".join(map(_ARGS_JSON, jobs)) or \
            _NUL_ESCAPE in "\n".join(map(_KWARGS_JSON, jobs)):
        for index, job in enumerate(jobs):
            args, kwargs = decode_arguments(job.args_json, job.kwargs_json)
            if _shape_problem(args, level=0, nul=True) or \
                    _shape_problem(kwargs, level=0, nul=True):
                raise TypeError(
                    f"job {index} of the batch ({job.name!r}): an argument holds a NUL "
                    "character (\\x00), which not every store can save; remove it"
                )


_ARGS_JSON = attrgetter("args_json")
_KWARGS_JSON = attrgetter("kwargs_json")
_DEBOUNCED = attrgetter("debounced")
_MAX_WAIT = attrgetter("max_wait")
_PARENTS = attrgetter("parents")
_META_JSON = attrgetter("meta_json")
_EXPIRES_AT = attrgetter("expires_at")


# How deep job arguments may nest (a list in a list ... counts each level). Far below
# Python's recursion limit, so encoding and decoding never raise RecursionError, in the
# enqueuing process or in a worker with a deep stack.
MAX_ARGUMENT_DEPTH = 100

# JSON writes a NUL character as this escape; it is refused because PostgreSQL cannot
# keep it in text (and so in a name, an error, or a json value read as text).
_NUL_ESCAPE = "\\u0000"


def encode_arguments(
    args: Sequence[object], kwargs: Mapping[str, object],
    max_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> tuple[str, str]:
    """Encode a job's arguments as JSON text: (args array, kwargs object).

    Raises:
        TypeError: naming the first argument that cannot be stored: not JSON-serialisable,
            a dict key that is not a str, a lone surrogate, a NUL character, or nested
            more than `MAX_ARGUMENT_DEPTH` levels deep.
        PayloadTooLarge: (a ValueError) if the two texts together take more than
            `max_bytes` bytes of UTF-8.
    """
    if len(args) == 0 and len(kwargs) == 0:
        return "[]", "{}"  # the common no-argument job: no encoder at all
    keywords = _str_keys(kwargs)
    try:
        encoded = _dumps(list(args)), _dumps(keywords)
        # json.dumps turns dict keys 1 and "1" both into "1", losing data silently, and
        # writes lone surrogates that no store can save as UTF-8: refuse both here.
        # The args array and the kwargs object themselves are level 0: each argument
        # counts its levels from 1, as `_check_json` does.
        if _shape_problem(args, level=0) is None and _shape_problem(keywords, level=0) is None:
            size = len(encoded[0].encode("utf-8")) + len(encoded[1].encode("utf-8"))
            _check_size("the job's arguments", size, max_bytes)
            if _NUL_ESCAPE not in encoded[0] and _NUL_ESCAPE not in encoded[1]:
                return encoded
            # The escape may be the text "\\u0000" (a backslash, then u0000): look.
            if _shape_problem(args, level=0, nul=True) is None and \
                    _shape_problem(keywords, level=0, nul=True) is None:
                return encoded
    except PayloadTooLarge:
        raise
    except (TypeError, ValueError, RecursionError):
        pass  # find the culprit, below, to name it
    for position, value in enumerate(args):
        _check_json(value, f"positional argument {position}")
    for key, value in kwargs.items():
        if "\x00" in key:
            raise TypeError(
                f"keyword argument name {key!r} holds a NUL character (\\x00), which not "
                "every store can save; remove it"
            )
        _check_json(value, f"keyword argument {key!r}")
    raise TypeError("job arguments are not JSON-serialisable")  # pragma: no cover


_TOO_DEEP = f"it is nested more than {MAX_ARGUMENT_DEPTH} levels deep"
_LOOSE_KEY = "a dict key is not a str; JSON would turn it into one"
_HOLDS_NUL = "a str holds a NUL character"


def _shape_problem(value: object, *, level: int = 1, nul: bool = False) -> str | None:
    """Why `value` cannot be stored as it is, judging its shape: a dict key that is not a
    str, nesting deeper than MAX_ARGUMENT_DEPTH, or (with `nul`) a NUL character in a str
    or key. None if there is no such problem. Iterative: no recursion limit applies; call
    it on values known to hold no cycle (the encoder refuses cycles first). `level` is the
    nesting level of `value` itself."""
    if nul and isinstance(value, str):
        return _HOLDS_NUL if "\x00" in value else None
    stack: list[tuple[object, int]] = [(value, level)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_ARGUMENT_DEPTH:
            return _TOO_DEEP
        if isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str):
                    return _LOOSE_KEY
                if nul and "\x00" in key:
                    return _HOLDS_NUL
                if isinstance(inner, dict | list | tuple):
                    stack.append((inner, depth + 1))
                elif nul and isinstance(inner, str) and "\x00" in inner:
                    return _HOLDS_NUL
        elif isinstance(item, list | tuple):
            for inner in item:
                if isinstance(inner, dict | list | tuple):
                    stack.append((inner, depth + 1))
                elif nul and isinstance(inner, str) and "\x00" in inner:
                    return _HOLDS_NUL
    return None


def _str_keys(kwargs: Mapping[str, object]) -> dict[str, object]:
    for key in kwargs:
        if not isinstance(key, str):
            raise TypeError(f"keyword argument names must be str; got {key!r}")
    return dict(kwargs)


def encode_result(value: object, max_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES) -> str | None:
    """A handler's return value as JSON text to store; None for None (nothing to store).

    Raises:
        TypeError: naming the value's type, if it is not a JSON value.
        PayloadTooLarge: (a ValueError) if it takes more than `max_bytes` bytes of UTF-8.
    """
    if value is None:
        return None
    try:
        text = _dumps(value)
        # The same rules as for arguments: str keys, bounded depth, no NUL (not every
        # store can save it).
        problem = _shape_problem(value, level=0, nul=True)
        size = len(text.encode("utf-8"))
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError):
        problem = "it is not a JSON value"
    if problem is not None:
        raise TypeError(
            f"the handler returned a {type(value).__name__} that cannot be stored as its "
            f"result: {problem}; return str, int, float, bool, None, or lists and dicts of "
            "them with str keys (the result is stored as JSON)"
        )
    _check_size("the handler's result", size, max_bytes)
    return text


def decode_result(text: str | None) -> JsonValue:
    """The stored result text back as a JSON value. Never raises: a result corrupted
    outside rota reads as None, so that reads (`get_job`, `rota job`) still show the job."""
    if text is None:
        return None
    try:
        value: JsonValue = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value


def decode_arguments(
    args_json: str, kwargs_json: str
) -> tuple[tuple[JsonValue, ...], dict[str, JsonValue]]:
    """The inverse of `encode_arguments`. No-argument jobs skip the JSON parser."""
    args = () if args_json == "[]" else tuple(json.loads(args_json))
    kwargs: dict[str, JsonValue] = {} if kwargs_json == "{}" else dict(json.loads(kwargs_json))
    return args, kwargs


def decode_stored_arguments(
    args_json: object, kwargs_json: object
) -> tuple[tuple[JsonValue, ...], dict[str, JsonValue], str | None]:
    """Decode a stored row's arguments without ever raising: (args, kwargs, problem).

    `problem` is None for a sound row. For a row whose text is not JSON, or not a JSON
    array (args) and a JSON object (kwargs), it is a `last_error`-style reason, and the
    arguments are () and {}: stores build a `JobRecord` with `arguments_error=problem`, so
    reads show the row and claims quarantine it instead of failing.
    """
    if args_json == "[]" and kwargs_json == "{}":
        return (), {}, None
    try:
        args = [] if args_json == "[]" else _loads_stored(args_json)
        kwargs = {} if kwargs_json == "{}" else _loads_stored(kwargs_json)
    except (TypeError, ValueError, RecursionError) as error:
        return (), {}, corrupt_arguments_error(f"{type(error).__name__}: {error}")
    if not isinstance(args, list):
        return (), {}, corrupt_arguments_error(f"args hold a {type(args).__name__}, not a list")
    if not isinstance(kwargs, dict):
        return (), {}, corrupt_arguments_error(
            f"kwargs hold a {type(kwargs).__name__}, not an object")
    return tuple(args), kwargs, None


def _loads_stored(text: object) -> JsonValue:
    if not isinstance(text, str | bytes | bytearray):
        raise TypeError(f"stored as {type(text).__name__}, not JSON text")
    return json.loads(text)


def corrupt_arguments_error(detail: str) -> str:
    """The reason a job whose stored arguments cannot be decoded is quarantined with."""
    return (
        f"CorruptArguments: the stored arguments cannot be decoded ({detail[:200]}); args "
        "must be a JSON array and kwargs a JSON object. Fix the row, then requeue the job"
    )


# One encoder for every call: json.dumps with non-default options builds a new
# JSONEncoder each time (a fifth of bulk-enqueue time). `encode` keeps no state between
# calls, so sharing it across threads is safe.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _dumps(value: object) -> str:
    return _ENCODER.encode(value)


def _check_json(value: object, what: str) -> None:
    try:
        text: str | None = _dumps(value)
    except RecursionError:
        text = None  # deeper than the encoder goes: the shape check names it
    except (TypeError, ValueError) as error:
        raise TypeError(_not_json(what, str(error))) from None
    problem = _shape_problem(value, nul=True)
    if problem == _TOO_DEEP:
        raise TypeError(
            f"{what} is nested more than {MAX_ARGUMENT_DEPTH} levels deep; job arguments may "
            f"nest at most {MAX_ARGUMENT_DEPTH} levels. Pass an id, or flatten the data"
        )
    if problem == _HOLDS_NUL:
        raise TypeError(
            f"{what} holds a NUL character (\\x00), which not every store can save; job "
            "arguments must not contain it. Remove it, or pass binary data as base64"
        )
    if problem is not None:
        raise TypeError(_not_json(what, problem))
    if text is None:  # within the limit, but the caller's own stack is nearly full
        raise TypeError(
            f"{what} is nested too deeply to encode from this call stack (RecursionError); "
            "flatten the data, or enqueue from a shallower call"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise TypeError(
            f"{what} is not valid Unicode text (it holds a lone surrogate); job arguments "
            "must be JSON values. Decode bytes properly, or pass them as base64"
        ) from None


def _not_json(what: str, why: str) -> str:
    return (
        f"{what} is not JSON-serialisable ({why}); job arguments must be JSON values "
        "(str, int, float, bool, None, lists and dicts with str keys). "
        "Pass an id or a plain dict instead"
    )
