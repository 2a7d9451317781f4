"""A job a group holds a lease on, from its claim until its outcome is written.

One `Held` per claimed attempt, shared by the group's tasks: the pass creates it, the
job's task runs it and sets its outcome, the heartbeats renew its lease, the outcome
writer (or a claim) writes the outcome and drops it. A group holds its attempts by `key`,
(job id, attempt): the same worker may hold attempt N, fenced off, beside attempt N+1 of
the same job, and whatever ends one never touches the other. All of it on the loop's
thread, so its flags need no lock; each flag says which task sets it. Imports the core and
the context.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime

from rota.core.jobs import JobRecord
from rota.core.outcomes import Outcome
from rota.store.base import LeaseOutcome
from rota.worker.context import CurrentJob


@dataclass(eq=False, slots=True)
class Held:
    """A job this group holds a lease on. Loop thread only."""

    job: JobRecord
    started_at: datetime
    # When its lease ends as this worker last sent it: the claim's, then each successful
    # renewal's (set by the pass, then the heartbeat task).
    lease_end: datetime
    task: asyncio.Task[Outcome | None] | None = None
    running: bool = True  # its handler occupies a Worker (set False by its job task)
    waiting: bool = False  # a suspect claimed but not started: it waits to run alone
    lost: bool = False  # a heartbeat found the lease gone (set by the heartbeat task)
    # Its lease came to its end without a renewal (the store did not answer): its handler
    # was told to stop and its outcome is never written (set by the heartbeat task).
    lapsed: bool = False
    handed_back: bool = False  # released at shutdown; its outcome is never written
    current: CurrentJob | None = None  # rota.current_job() of its handler (its job task)
    overran: bool = False  # a sync handler past its timeout still holds its Worker thread
    # Set by its job task when the handler finished: the outcome to write (no second
    # object per job for the writer's list).
    outcome: Outcome | None = None
    key: tuple[int, int] = field(init=False)  # (job id, attempt): how the group holds it

    def __post_init__(self) -> None:
        self.key = (self.job.id, self.job.attempt)


def lease_outcomes(finished: list[Held]) -> list[LeaseOutcome]:
    """The (lease, outcome) pairs of held jobs whose outcome is set, for a claim to write."""
    return [(held.job.lease, held.outcome) for held in finished if held.outcome is not None]
