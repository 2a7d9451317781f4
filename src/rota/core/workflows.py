"""Workflows: jobs that wait for other jobs, their parents (`configure(after=[...])`).

Theory of operation: a child is enqueued after parents that already exist. While any
parent has not finished, the child is `waiting`: in no claim, counted in no Queue's due
work. Each store keeps beside the child how many of its parents have not yet finished
(`waiting_for`), and beside each parent the edges to its children, so that finishing a
parent reads its own children and nothing else. The transaction that puts a parent into a
finished state settles each of its waiting children, by `parent_lets_child_run`:

- the parent's end counts: one parent less to wait for; the child whose last parent this
  was becomes `scheduled`, due at the later of its own due time and the parent's
  `finished_at` (`due_when_released`), and is dispatched by its Queue's policy like any
  job;
- or it does not (`after_outcome="succeeded"` and the parent ended dead_lettered,
  quarantined or cancelled): the child ends `cancelled`, `last_error` naming the parent
  (`parent_failed_error`), and that settles its own children in turn.

A child enqueued after parents of which some have already finished starts from the same
rule (`at_enqueue`). Nothing polls and no sweeper runs: a crash before the parent's
transaction commits leaves parent and child as they were, and one after it leaves both
changed.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from rota.core.jobs import JobState


def parent_lets_child_run(parent_state: JobState, after_outcome: str) -> bool:
    """Whether a parent that ended in `parent_state` (a finished state) lets a child
    enqueued with `after_outcome` go on: always for "finished", only a success for
    "succeeded"."""
    return parent_state is JobState.SUCCEEDED or after_outcome == "finished"


def parent_failed_error(parent_id: int, parent_state: JobState) -> str:
    """The `last_error` of a child cancelled because parent `parent_id` ended in
    `parent_state` (not succeeded) while the child needed it to succeed."""
    return (
        f"Cancelled: parent job {parent_id} ended {parent_state.value}, and this job was "
        "to run only after its parents succeeded (after_outcome='succeeded')"
    )


def due_when_released(due_at: datetime, finished_at: datetime) -> datetime:
    """When a child whose last parent finished at `finished_at` is due: not before its
    own due time (a `delay` counts from its enqueue), not before that instant."""
    return max(due_at, finished_at)


@dataclass(frozen=True, slots=True)
class Start:
    """How a new child starts: `state` waiting (for `waiting_for` parents), scheduled
    (every parent already finished and let it run) or cancelled (`error` names the parent
    that ended otherwise)."""

    state: JobState
    waiting_for: int
    error: str | None = None


def at_enqueue(parents: Sequence[int], states: Mapping[int, JobState],
               after_outcome: str) -> Start:
    """How a child enqueued after `parents` starts, given each parent's state now.

    Raises:
        ValueError: naming the first parent id that is no job (nothing is stored).
    """
    unfinished = 0
    failed: tuple[int, JobState] | None = None
    for parent in parents:
        state = states.get(parent)
        if state is None:
            raise ValueError(unknown_parent_error(parent))
        if not state.finished:
            unfinished += 1
        elif failed is None and not parent_lets_child_run(state, after_outcome):
            failed = (parent, state)
    if failed is not None:
        return Start(JobState.CANCELLED, 0, parent_failed_error(*failed))
    if unfinished:
        return Start(JobState.WAITING, unfinished)
    return Start(JobState.SCHEDULED, 0)


def unknown_parent_error(parent_id: int) -> str:
    """The `ValueError` message for `after=` naming a job that does not exist."""
    return (
        f"after= names job {parent_id}, which does not exist (never enqueued, or already "
        "deleted by retention); nothing was enqueued"
    )
