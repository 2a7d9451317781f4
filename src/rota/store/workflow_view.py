"""The workflow around one job, as `rota job` and the dashboard show it: its parents and
children, and how many parents a waiting job still waits for.

Reads only the store contract.
"""

from __future__ import annotations

from dataclasses import dataclass

from rota.core.jobs import JobRecord, JobState
from rota.store.base import FinishSource, Store


@dataclass(frozen=True, slots=True)
class Related:
    """`parents` and `children`: the ids shown (at most `shown` each; a waiting job's
    unfinished parents first: the ones it waits for), out of `parents_total` and
    `children_total`. `waiting_for`: how many parents a waiting job waits for (None in any
    other state). `records`: the record of every id shown, None for a job no longer stored
    (a finished job's parents may have been purged)."""

    parents_total: int
    waiting_for: int | None
    parents: tuple[int, ...]
    children_total: int
    children: tuple[int, ...]
    records: dict[int, JobRecord | None]

    def as_json(self) -> dict[str, object]:
        """The fields of `rota job --json` and the dashboard's job API."""
        return {
            "parents_total": self.parents_total,
            "waiting_for": self.waiting_for,
            "parents": [relative_json(i, self.records[i]) for i in self.parents],
            "children_total": self.children_total,
            "children": [relative_json(i, self.records[i]) for i in self.children],
        }


def relative_json(job_id: int, record: JobRecord | None) -> dict[str, object]:
    """A parent or child as shown: its id, name and state (null for a job no longer
    stored)."""
    return {"id": job_id, "name": None if record is None else record.name,
            "state": None if record is None else record.state.value}


def related(store: Store, job: JobRecord, shown: int) -> Related:
    """The workflow around `job`, `shown` parents and children at most. A waiting job's
    parents are counted with one `job_states` read where the store has it (every store of
    rota), else one `get_job` each; the jobs shown are read with `get_job`."""
    parents = list(job.parents)
    waiting_for = None
    if job.state is JobState.WAITING and parents:
        states = _states(store, parents)
        # A parent that is gone is not waited for (the store keeps a job while a child of
        # it has not finished).
        unfinished = [parent for parent in parents
                      if parent in states and not states[parent].finished]
        waiting_for, waited = len(unfinished), set(unfinished)
        parents = unfinished + [parent for parent in parents if parent not in waited]
    children = store.job_children(job.id)
    shown_parents, shown_children = tuple(parents[:shown]), tuple(children[:shown])
    records = {one: store.get_job(one) for one in (*shown_parents, *shown_children)}
    return Related(len(job.parents), waiting_for, shown_parents, len(children),
                   shown_children, records)


def _states(store: Store, ids: list[int]) -> dict[int, JobState]:
    if isinstance(store, FinishSource):
        return store.job_states(ids)
    found = {job_id: store.get_job(job_id) for job_id in ids}
    return {job_id: record.state for job_id, record in found.items() if record is not None}
