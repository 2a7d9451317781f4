"""The bulk actions (`App.cancel_jobs`, `App.requeue_jobs`, `rota cancel --queue`, the
dashboard's buttons): every job a filter selects, walked a page at a time by id
(`Store.find_jobs` with `beyond`), each changed by the store's single-job call
(`cancel`, `requeue`), so a bulk action keeps every promise of those calls: exact
per-Queue counts, a leased job's cancel request, a workflow parent's children settled,
a unique job's key never live twice.

The order makes the counts exact: cancels walk newest first (a child's id is greater than
its parents'), waiting jobs, then scheduled ones, then leased ones, so a matching child is
cancelled by its own call before its parent's cancel would end it as a consequence (a
job cancelled as a consequence is counted only if it matched and was reached first).
Requeues walk oldest first, as `requeue_many` does: of several jobs sharing a unique key,
the oldest comes back. Jobs enqueued after the action started may or may not be reached.

Imports the core and the store contract.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from rota.core.job_filters import JobFilter
from rota.core.jobs import REQUEUEABLE_STATES, JobRecord, JobState
from rota.store.base import Store

# Jobs read per page: one find_jobs call per page, then one store call per job.
BATCH: Final = 500
# The states a cancel changes, in the order they are walked (see the module docstring).
CANCEL_ORDER: Final = (JobState.WAITING, JobState.SCHEDULED, JobState.LEASED)
REQUEUE_ORDER: Final = (JobState.DEAD_LETTERED, JobState.QUARANTINED, JobState.CANCELLED)
assert frozenset(REQUEUE_ORDER) == REQUEUEABLE_STATES


def refuse_empty(selected: JobFilter, everything: bool, action: str) -> None:
    """A bulk action with no filter acts on every job only when asked to in so many
    words (`everything=True`, `--all`): a forgotten filter never cancels a whole store.

    Raises:
        ValueError: for no filter without `everything`.
    """
    if selected.empty and not everything:
        raise ValueError(
            f"{action} with no filter would change every job: give a filter (queue=, "
            f"state=, name=, meta=), or say everything=True to {action} every job"
        )


@dataclass
class BulkResult:
    """What a bulk action changed: how many jobs, and of which Queues."""

    count: int = 0
    queues: dict[str, None] = field(default_factory=dict)  # in the order first changed

    def add(self, job: JobRecord) -> None:
        self.count += 1
        self.queues[job.queue] = None


def _walk(store: Store, selected: JobFilter, states: Sequence[JobState], newest: bool,
          change: Callable[[JobRecord], bool]) -> BulkResult:
    result = BulkResult()
    for state in states:
        if selected.state is not None and selected.state is not state:
            continue
        beyond: int | None = None
        while True:
            page = store.find_jobs(queue=selected.queue, state=state, name=selected.name,
                                   meta=selected.meta, limit=BATCH, newest=newest,
                                   beyond=beyond)
            for job in page:
                if change(job):
                    result.add(job)
            if len(page) < BATCH:
                break
            beyond = page[-1].id
    return result


def cancel_jobs(store: Store, selected: JobFilter, now: datetime) -> BulkResult:
    """`store.cancel` every waiting, scheduled or leased job `selected` names; a leased
    job whose cancel was already requested is not changed (nor counted). Finished jobs
    are left alone."""
    def change(job: JobRecord) -> bool:
        if job.state is JobState.LEASED and job.cancel_requested:
            return False
        return store.cancel(job.id, now)

    return _walk(store, selected, CANCEL_ORDER, True, change)


def requeue_jobs(store: Store, selected: JobFilter, now: datetime) -> BulkResult:
    """`store.requeue` every dead_lettered, quarantined or cancelled job `selected`
    names. Succeeded and unfinished jobs are left alone."""
    return _walk(store, selected, REQUEUE_ORDER, False,
                 lambda job: store.requeue(job.id, now))
