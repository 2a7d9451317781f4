"""Retention: how long finished jobs are kept, and which rows a purge may delete.

`Retention` is the value a user passes to `rota.App(..., retention=...)`; `rules(now)`
turns it into `PurgeRule`s (which states, finished before when) that the worker's
retention duty (`rota.worker.retention`) hands to the store's `purge`. Only finished jobs
are ever purged: `purgeable_states` refuses any other state.

Pure: no I/O, no clock (`now` is an argument).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from rota.core.durations import Duration, to_timedelta
from rota.core.jobs import FINISHED_STATES, JobState

# Finished states in a fixed order (messages, JSON output, one purge statement per state).
PURGEABLE_STATES: tuple[JobState, ...] = (
    JobState.SUCCEEDED, JobState.CANCELLED, JobState.DEAD_LETTERED, JobState.QUARANTINED,
)
assert frozenset(PURGEABLE_STATES) == FINISHED_STATES

# Kept by `Retention.succeeded`, and by `Retention.failed`.
SUCCEEDED_STATES: tuple[JobState, ...] = (JobState.SUCCEEDED, JobState.CANCELLED)
FAILED_STATES: tuple[JobState, ...] = (JobState.DEAD_LETTERED, JobState.QUARANTINED)

DEFAULT_SUCCEEDED = timedelta(days=1)
DEFAULT_FAILED = timedelta(days=14)
DEFAULT_INTERVAL = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class PurgeRule:
    """Delete the jobs in `states` whose `finished_at` is before `finished_before`."""

    states: tuple[JobState, ...]
    finished_before: datetime


@dataclass(frozen=True, slots=True, init=False)
class Retention:
    """How long finished jobs are kept before workers delete them.

    Args:
        succeeded: how long `succeeded` and `cancelled` jobs are kept after they finished
            (timedelta or seconds); None keeps them forever. Default 1 day.
        failed: the same for `dead_lettered` and `quarantined` jobs. Default 14 days.
        interval: how often the App's maintenance worker (one elected worker process) looks
            for expired jobs. Default 1 minute.

    Raises:
        TypeError: a duration that is neither a timedelta nor a number (nor None).
        ValueError: a duration that is zero, negative or not finite.
    """

    succeeded: timedelta | None
    failed: timedelta | None
    interval: timedelta

    def __init__(
        self,
        *,
        succeeded: Duration | None = DEFAULT_SUCCEEDED,
        failed: Duration | None = DEFAULT_FAILED,
        interval: Duration = DEFAULT_INTERVAL,
    ) -> None:
        object.__setattr__(self, "succeeded", _keep_for(succeeded, "succeeded"))
        object.__setattr__(self, "failed", _keep_for(failed, "failed"))
        object.__setattr__(self, "interval", to_timedelta(interval, "Retention(interval=...)"))

    def rules(self, now: datetime) -> tuple[PurgeRule, ...]:
        """What to delete at `now`: one rule per kept-for duration that is not None."""
        rules: list[PurgeRule] = []
        if self.succeeded is not None:
            rules.append(PurgeRule(SUCCEEDED_STATES, now - self.succeeded))
        if self.failed is not None:
            rules.append(PurgeRule(FAILED_STATES, now - self.failed))
        return tuple(rules)

    @property
    def keeps_everything(self) -> bool:
        """True when both durations are None: nothing is ever deleted."""
        return self.succeeded is None and self.failed is None


def _keep_for(value: Duration | None, what: str) -> timedelta | None:
    if value is None:
        return None
    try:
        return to_timedelta(value, f"Retention({what}=...)")
    except ValueError as error:
        raise ValueError(f"{error}; use None to keep those jobs forever") from None


StateSelection = Iterable[JobState | str] | JobState | str | None


def purgeable_states(states: StateSelection) -> tuple[JobState, ...]:
    """The finished states `states` names (None: all of them), in `PURGEABLE_STATES` order.

    Raises:
        ValueError: a state that is unknown or not finished (purge never deletes a job
            that is scheduled or leased), or an empty selection.
        TypeError: an item that is neither a JobState nor a str.
    """
    if states is None:
        return PURGEABLE_STATES
    items: Iterable[JobState | str] = (
        (states,) if isinstance(states, JobState | str) else states
    )
    names = ", ".join(state.value for state in PURGEABLE_STATES)
    chosen: set[JobState] = set()
    for item in items:
        if isinstance(item, JobState):
            state = item
        elif isinstance(item, str):
            try:
                state = JobState(item)
            except ValueError:
                raise ValueError(
                    f"unknown job state {item!r}; purge takes finished states: {names}"
                ) from None
        else:
            raise TypeError(f"states must be rota.JobState values or their names; got {item!r}")
        if state not in FINISHED_STATES:
            raise ValueError(
                f"purge deletes only finished jobs, not {state.value} ones; "
                f"choose among: {names}"
            )
        chosen.add(state)
    if not chosen:
        raise ValueError(f"states selects nothing; pass None for every finished state ({names})")
    return tuple(state for state in PURGEABLE_STATES if state in chosen)
