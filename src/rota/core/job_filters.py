"""The filters of `find_jobs` and of the bulk actions (`cancel_jobs`, `requeue_jobs`): a
Queue, a state, a job name and meta, each optional, checked once for every caller (the
App, `rota jobs` / `rota cancel`, the dashboard), and the text form `KEY=VALUE` of a meta
filter that the command line and the dashboard take.

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from rota.core.jobs import JobState, JsonValue
from rota.core.meta import meta_filter

STATE_NAMES = ", ".join(state.value for state in JobState)


@dataclass(frozen=True, slots=True)
class JobFilter:
    """Which jobs a find or a bulk action selects: all of the given filters (None: any)."""

    queue: str | None = None
    state: JobState | None = None
    name: str | None = None
    meta: dict[str, JsonValue] | None = None

    @property
    def empty(self) -> bool:
        """True when no filter is given: every job matches."""
        return self.queue is None and self.state is None and self.name is None \
            and self.meta is None


def checked_state(state: object) -> JobState | None:
    """`state` as a JobState: a JobState, or its value ("scheduled"); None for None.

    Raises:
        ValueError: for a str that names no state, naming the states.
        TypeError: for anything else.
    """
    if state is None or isinstance(state, JobState):
        return state
    if isinstance(state, str):
        try:
            return JobState(state)
        except ValueError:
            raise ValueError(
                f"unknown job state {state!r}; the states are {STATE_NAMES}") from None
    raise TypeError(f"a job state is a rota.JobState or its name ({STATE_NAMES}); "
                    f"got {state!r} ({type(state).__name__})")


def _text(value: object, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{what} must be a str; got {value!r} ({type(value).__name__})")


def job_filter(queue: object = None, state: object = None, name: object = None,
               meta: object = None) -> JobFilter:
    """The filters checked (an empty meta filter is no filter).

    Raises:
        ValueError: an unknown state (naming the states).
        TypeError: a Queue or job name that is not a str, meta that is not a JSON object.
    """
    return JobFilter(_text(queue, "queue"), checked_state(state), _text(name, "name"),
                     meta_filter(meta))


def _no_constant(name: str) -> JsonValue:
    raise ValueError(f"{name} is not JSON")  # NaN, Infinity: read as text


def parse_meta_pairs(pairs: Iterable[str]) -> dict[str, JsonValue]:
    """`KEY=VALUE` texts as a meta filter: VALUE is read as JSON when it is JSON (42,
    true, null, "42", [1, 2]), else as a str (acme): `tenant=acme` and `order=42` mean
    {"tenant": "acme", "order": 42}; `order="42"` matches the str "42".

    Raises:
        ValueError: for a text without `=`, or an empty key.
    """
    meta: dict[str, JsonValue] = {}
    for pair in pairs:
        key, equals, text = pair.partition("=")
        if not equals or not key:
            raise ValueError(f"a meta filter is KEY=VALUE (e.g. tenant=acme); got {pair!r}")
        try:
            meta[key] = json.loads(text, parse_constant=_no_constant)
        except ValueError:
            meta[key] = text
    return meta
