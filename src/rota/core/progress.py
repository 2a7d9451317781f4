"""What a job reports while it runs, and what is kept of its failed attempts.

`Progress` is what a handler last reported with `rota.current_job().set_progress(...)`;
`AttemptError` is one failed attempt, of which a job keeps the last `MAX_KEPT_ERRORS`.
Both are stored as JSON text (one object, one array of objects): `progress_json`,
`attempt_error_json` and their readers are the one encoding every store uses.

`ProgressPacer` decides when a reported progress is written: the first report of an
attempt at once, then at most one a `PROGRESS_INTERVAL`; the last report is written when
the handler returns (the drive flushes what is pending).

Pure: time is always an argument.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

# How many failed attempts a job keeps (the oldest go first); the SQL statements that
# append one say 20 too.
MAX_KEPT_ERRORS = 20
# The longest progress message, in characters.
MAX_PROGRESS_MESSAGE = 500
# At most one progress write per job and this interval (the first and the last excepted).
PROGRESS_INTERVAL = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class Progress:
    """What a running job last reported (`rota.current_job().set_progress`).

    Attributes:
        done: how much is done (a number, 0 or more).
        total: how much there is in all, or None when not known.
        message: a short text, "" for none.
        at: when it was reported (the worker's clock).
    """

    done: float
    total: float | None
    message: str
    at: datetime

    @property
    def fraction(self) -> float | None:
        """done / total between 0 and 1; None without a total (1.0 for a total of 0)."""
        if self.total is None:
            return None
        return 1.0 if self.total == 0 else min(1.0, self.done / self.total)


@dataclass(frozen=True, slots=True)
class AttemptError:
    """One failed attempt of a job (`JobRecord.errors`).

    Attributes:
        attempt: the attempt's number, 1-based.
        at: when it failed.
        error: why (`TypeName: message`), as `JobRecord.last_error` said then.
        traceback: the formatted traceback of the exception, None when it came from none
            (an expired lease, say).
        worker: the id of the worker that ran it (as `rota workers` lists it).
    """

    attempt: int
    at: datetime
    error: str
    traceback: str | None
    worker: str | None


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"set_progress: {what} must be a number (int or float), "
                        f"not {type(value).__name__} {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"set_progress: {what} must be a finite number of 0 or more; "
                         f"got {value!r}")
    return value


def check_progress(done: object, total: object, message: object) -> tuple[float, float | None,
                                                                           str]:
    """The arguments of `set_progress`, checked.

    Raises:
        TypeError: done or total not a number (a bool is not one), message not a str.
        ValueError: a negative or non-finite number, done above total, a message longer
            than `MAX_PROGRESS_MESSAGE` characters.
    """
    done_value = _number(done, "done")
    total_value = None if total is None else _number(total, "total")
    if total_value is not None and done_value > total_value:
        raise ValueError(f"set_progress: done ({done!r}) is more than total ({total!r}); "
                         "pass a total of at least done, or total=None when it is not known")
    if not isinstance(message, str):
        raise TypeError(f"set_progress: message must be a str, not {type(message).__name__}")
    if len(message) > MAX_PROGRESS_MESSAGE:
        raise ValueError(f"set_progress: message is {len(message)} characters long; at most "
                         f"{MAX_PROGRESS_MESSAGE} are kept, so shorten it")
    return done_value, total_value, message


def worker_of_owner(owner: str) -> str:
    """The worker id in a lease owner id (`group@host:pid:token` -> `host:pid:token`): the
    id `rota workers` lists. An owner without `@` is its own worker id."""
    return owner.rpartition("@")[2]


def progress_fields(progress: Progress) -> dict[str, Any]:
    """`progress` as a JSON object (its time as ISO 8601 text): as stored, and as
    `rota job --json` and the dashboard's API show it."""
    return {"done": progress.done, "total": progress.total, "message": progress.message,
            "at": progress.at.isoformat()}


def progress_json(progress: Progress) -> str:
    return json.dumps(progress_fields(progress), ensure_ascii=False)


def progress_text(progress: Progress | None) -> str:
    """`3/10 (30%) rows`; `7 pages` without a total; "" for none."""
    if progress is None:
        return ""
    done = f"{progress.done:g}"
    fraction = progress.fraction
    text = done if fraction is None else f"{done}/{progress.total:g} ({fraction:.0%})"
    return f"{text} {progress.message}".rstrip()


def progress_from_json(text: str | None) -> Progress | None:
    if text is None:
        return None
    value = json.loads(text)
    return Progress(value["done"], value["total"], value["message"],
                    datetime.fromisoformat(value["at"]))


def attempt_error_fields(error: AttemptError) -> dict[str, Any]:
    """`error` as a JSON object (its time as ISO 8601 text), the traceback last: as
    stored, and as `rota job --json` and the dashboard's API show it."""
    return {"attempt": error.attempt, "at": error.at.isoformat(), "error": error.error,
            "worker": error.worker, "traceback": error.traceback}


def attempt_error_json(error: AttemptError) -> str:
    return json.dumps(attempt_error_fields(error), ensure_ascii=False)


def _attempt_error(value: dict[str, Any]) -> AttemptError:
    return AttemptError(value["attempt"], datetime.fromisoformat(value["at"]),
                        value["error"], value["traceback"], value["worker"])


def errors_from_json(text: str | None) -> tuple[AttemptError, ...]:
    """A stored errors array (NULL: none) as `JobRecord.errors`, oldest first."""
    if text is None:
        return ()
    return tuple(_attempt_error(value) for value in json.loads(text))


def kept_errors(errors: tuple[AttemptError, ...], new: AttemptError
                ) -> tuple[AttemptError, ...]:
    """`errors` with `new` appended, the oldest dropped beyond `MAX_KEPT_ERRORS`."""
    return (*errors, new)[-MAX_KEPT_ERRORS:]


class ProgressPacer:
    """When one attempt's progress reports are written (module doc). Not thread-safe on
    its own: the caller serialises `report` and `take_pending`."""

    __slots__ = ("_last_write", "pending")

    def __init__(self) -> None:
        self._last_write: datetime | None = None
        self.pending: Progress | None = None  # reported, not written yet

    def report(self, progress: Progress) -> Progress | None:
        """Note `progress`; return it if it is to be written now, else keep it pending
        (None)."""
        last = self._last_write
        if last is None or progress.at - last >= PROGRESS_INTERVAL or progress.at < last:
            self._last_write = progress.at
            self.pending = None
            return progress
        self.pending = progress
        return None

    def take_pending(self) -> Progress | None:
        """The report not written yet, if any (the last one): the caller writes it."""
        pending, self.pending = self.pending, None
        return pending
