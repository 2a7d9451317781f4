"""Jobs: the records a store keeps, their states, and the table of legal state changes.

Theory of operation: a job is `scheduled` until a claim leases it (`leased`, attempt + 1).
A lease ends in exactly one outcome: `succeeded`, back to `scheduled` (retry with a new due
time, or released unstarted at shutdown), `dead_lettered` or `quarantined`. A scheduled job
can be `cancelled`. Every store applies `TRANSITIONS`, in Python or as SQL `WHERE` clauses;
the contract suite checks they agree.

Pure: no I/O, no clock. Arguments are JSON, encoded and checked here before anything is
stored, so a bad argument never half-writes a job.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

JsonValue = Any  # what json.loads returns; kept opaque on purpose


class JobState(Enum):
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


TRANSITIONS: Mapping[tuple[JobState, JobEvent], JobState] = {
    (JobState.SCHEDULED, JobEvent.CLAIM): JobState.LEASED,
    (JobState.SCHEDULED, JobEvent.CANCEL): JobState.CANCELLED,
    (JobState.LEASED, JobEvent.COMPLETE): JobState.SUCCEEDED,
    (JobState.LEASED, JobEvent.RETRY): JobState.SCHEDULED,
    (JobState.LEASED, JobEvent.RELEASE): JobState.SCHEDULED,
    (JobState.LEASED, JobEvent.DEAD_LETTER): JobState.DEAD_LETTERED,
    (JobState.LEASED, JobEvent.QUARANTINE): JobState.QUARANTINED,
}


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


@dataclass(frozen=True, slots=True)
class JobRecord:
    """A job as the store holds it."""

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

    @property
    def lease(self) -> Lease:
        """The lease this record was claimed under.

        Raises:
            ValueError: if the job is not leased.
        """
        if self.lease_owner is None:
            raise ValueError(f"job {self.id} is {self.state.value}, not leased")
        return Lease(self.id, self.lease_owner, self.attempt)


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a job, and for which attempt: every outcome is fenced by both."""

    job_id: int
    owner: str
    attempt: int


@dataclass(frozen=True, slots=True)
class NewJob:
    """A job about to be enqueued, its arguments already encoded as JSON text."""

    name: str
    queue: str
    due_at: datetime
    args_json: str = "[]"
    kwargs_json: str = "{}"


def encode_arguments(args: Sequence[object], kwargs: Mapping[str, object]) -> tuple[str, str]:
    """Encode a job's arguments as JSON text: (args array, kwargs object).

    Raises:
        TypeError: naming the first argument that is not JSON-serialisable.
    """
    if len(args) == 0 and len(kwargs) == 0:
        return "[]", "{}"  # the common no-argument job: no encoder at all
    keywords = _str_keys(kwargs)
    try:
        encoded = _dumps(list(args)), _dumps(keywords)
        # json.dumps turns dict keys 1 and "1" both into "1", losing data silently, and
        # writes lone surrogates that no store can save as UTF-8: refuse both here.
        if not _has_loose_keys(args) and not _has_loose_keys(keywords):
            encoded[0].encode("utf-8")
            encoded[1].encode("utf-8")
            return encoded
    except (TypeError, ValueError):
        pass  # find the culprit, below, to name it
    for position, value in enumerate(args):
        _check_json(value, f"positional argument {position}")
    for key, value in kwargs.items():
        _check_json(value, f"keyword argument {key!r}")
    raise TypeError("job arguments are not JSON-serialisable")  # pragma: no cover


def _has_loose_keys(value: object) -> bool:
    """Whether a dict anywhere inside `value` has a key that is not a str."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str):
                    return True
                if isinstance(inner, dict | list | tuple):
                    stack.append(inner)
        elif isinstance(item, list | tuple):
            stack.extend(inner for inner in item if isinstance(inner, dict | list | tuple))
    return False


def _str_keys(kwargs: Mapping[str, object]) -> dict[str, object]:
    for key in kwargs:
        if not isinstance(key, str):
            raise TypeError(f"keyword argument names must be str; got {key!r}")
    return dict(kwargs)


def decode_arguments(
    args_json: str, kwargs_json: str
) -> tuple[tuple[JsonValue, ...], dict[str, JsonValue]]:
    """The inverse of `encode_arguments`. No-argument jobs skip the JSON parser."""
    args = () if args_json == "[]" else tuple(json.loads(args_json))
    kwargs: dict[str, JsonValue] = {} if kwargs_json == "{}" else dict(json.loads(kwargs_json))
    return args, kwargs


# One encoder for every call: json.dumps with non-default options builds a new
# JSONEncoder each time (a fifth of bulk-enqueue time). `encode` keeps no state between
# calls, so sharing it across threads is safe.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _dumps(value: object) -> str:
    return _ENCODER.encode(value)


def _check_json(value: object, what: str) -> None:
    try:
        text = _dumps(value)
        if _has_loose_keys(value):
            raise ValueError("a dict key is not a str; JSON would turn it into one")
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise TypeError(
            f"{what} is not valid Unicode text (it holds a lone surrogate); job arguments "
            "must be JSON values. Decode bytes properly, or pass them as base64"
        ) from None
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{what} is not JSON-serialisable ({error}); job arguments must be JSON values "
            "(str, int, float, bool, None, lists and dicts with str keys). "
            "Pass an id or a plain dict instead"
        ) from None
