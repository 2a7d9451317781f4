"""A job a group holds a lease on, from its claim until its outcome is written.

One `Held` per claimed job, shared by the group's tasks: the pass creates it, the job's
task runs it and sets its outcome, the heartbeats renew its lease, the outcome writer
(or a claim) writes the outcome and drops it. All of it on the loop's thread, so its
flags need no lock; each flag says which task sets it. Imports the core and the context.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
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
    task: asyncio.Task[Outcome | None] | None = None
    running: bool = True  # its handler occupies a Worker (set False by its job task)
    waiting: bool = False  # a suspect claimed but not started: it waits to run alone
    lost: bool = False  # a heartbeat found the lease gone (set by the heartbeat task)
    handed_back: bool = False  # released at shutdown; its outcome is never written
    current: CurrentJob | None = None  # rota.current_job() of its handler (its job task)
    overran: bool = False  # a sync handler past its timeout still holds its Worker thread
    # Set by its job task when the handler finished: the outcome to write (no second
    # object per job for the writer's list).
    outcome: Outcome | None = None


def lease_outcomes(finished: list[Held]) -> list[LeaseOutcome]:
    """The (lease, outcome) pairs of held jobs whose outcome is set, for a claim to write."""
    return [(held.job.lease, held.outcome) for held in finished if held.outcome is not None]
