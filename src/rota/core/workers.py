"""The worker registry's values: who is working (`WorkerInfo`), what each Worker Group
is (`WorkerGroupInfo`), what was served (`ServedCount`), and the fairness view built from
them (`GroupFairness`, `QueueShare`).

Theory of operation: every worker process registers one row in the store when it starts
and refreshes it with its heartbeats (`rota.worker.registry`). The row carries the
process's groups (policy, pool size, jobs in flight) and its served counters since start;
each refresh also adds what was served since the previous one to per-minute history
buckets keyed by (minute, group, Queue, outcome), and the group's policy is kept in a
groups table, so the last hour's served shares can be shown against the weights after
every worker stopped. A row whose `dead_at` has passed is shown as dead (`alive` False),
and removed later by any worker's refresh.

What runs now (`rota workers --jobs`, the dashboard's worker page) is not in the row: it
is read from the jobs themselves, the leased ones whose `lease_owner` is one of a live
worker's groups' owner ids (`Store.jobs_in_flight`, `running_jobs` here), so a claim
writes nothing more for it.

Pure: no I/O, no clock. Imports only `rota.core.policy` and `rota.core.jobs`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rota.core.jobs import JobRecord
from rota.core.policy import DispatchPolicy, Strict, Weighted

__all__ = [
    "OUTCOMES",
    "REMOVE_DEAD_AFTER",
    "SERVED_HISTORY",
    "GroupFairness",
    "QueueShare",
    "RunningJob",
    "ServedCount",
    "WorkerGroupInfo",
    "WorkerInfo",
    "dead_after",
    "fairness",
    "fairness_to_json",
    "group_to_json",
    "in_flight_owners",
    "minute_of",
    "policy_from_parts",
    "policy_parts",
    "running_jobs",
    "running_to_json",
    "served_to_json",
    "worker_to_json",
]

# The outcome names a served count can carry (rota.OutcomeKind's values).
OUTCOMES = ("succeeded", "retried", "dead_lettered", "quarantined", "cancelled", "snoozed",
            "expired")

# A worker row not refreshed for this many of its refresh intervals (its groups' shortest
# heartbeat interval) is shown as dead: it missed two refreshes in a row, with half an
# interval's grace for a slow store. It is removed REMOVE_DEAD_AFTER after that.
DEAD_AFTER_INTERVALS = 2.5
REMOVE_DEAD_AFTER = timedelta(hours=1)
# Per-minute served history older than this is pruned by the workers' refreshes.
SERVED_HISTORY = timedelta(hours=24)


def dead_after(refresh_interval: timedelta) -> timedelta:
    """How long after its last refresh a worker counts as dead (`DEAD_AFTER_INTERVALS` of
    its refresh interval: 50 s with the default 60 s lease and 20 s heartbeat)."""
    return DEAD_AFTER_INTERVALS * refresh_interval


def minute_of(moment: datetime) -> datetime:
    """The start of the minute bucket `moment` falls in."""
    return moment.replace(second=0, microsecond=0)


def policy_parts(policy: DispatchPolicy) -> tuple[str, tuple[str, ...], tuple[int, ...] | None]:
    """A policy as (kind, Queues, weights) for storage; weights None for Strict."""
    if isinstance(policy, Weighted):
        return "weighted", policy.queues, tuple(weight for _, weight in policy.weights)
    return "strict", policy.queues, None


def policy_from_parts(
    kind: str, queues: Sequence[str], weights: Sequence[int] | None
) -> DispatchPolicy:
    """The inverse of `policy_parts`.

    Raises:
        ValueError: for an unknown kind or weights that do not match the Queues.
    """
    if kind == "strict":
        return Strict(list(queues))
    if kind == "weighted" and weights is not None and len(weights) == len(queues):
        return Weighted(list(zip(queues, weights, strict=True)))
    raise ValueError(f"a stored Worker Group policy is unreadable: {kind!r} {queues!r} {weights!r}")


@dataclass(frozen=True, slots=True)
class WorkerGroupInfo:
    """A Worker Group as a worker registered it.

    Attributes:
        name: the group's name.
        policy: its Dispatch Policy in the worker's code (`rota.Strict` or
            `rota.Weighted`); a policy stored for the group (`App.set_group_policy`)
            overrides it while stored: `rota.core.serving.in_force`.
        pool_size: its Workers.
        in_flight: jobs it holds now (running, or finished with the outcome unwritten);
            0 in `worker_groups()`.
        owner: its lease owner id (`group@host:pid:token`, the `lease_owner` of the jobs it
            holds); "" in `worker_groups()`.
        seen_at: `worker_groups()` only: when a worker last registered the group.
    """

    name: str
    policy: DispatchPolicy
    pool_size: int
    in_flight: int = 0
    owner: str = ""
    seen_at: datetime | None = None

    @property
    def kind(self) -> str:
        """"strict" or "weighted"."""
        return policy_parts(self.policy)[0]

    @property
    def weights(self) -> tuple[tuple[str, int], ...]:
        """The (Queue, weight) pairs of a Weighted policy; () for Strict."""
        return self.policy.weights if isinstance(self.policy, Weighted) else ()


@dataclass(frozen=True, slots=True)
class ServedCount:
    """Jobs of one Queue served by one Worker Group with one outcome.

    Attributes:
        group, queue: the Worker Group and the Queue.
        outcome: what became of the attempts: "succeeded", "retried", "dead_lettered",
            "quarantined", "cancelled", "snoozed" or "expired" (`rota.OutcomeKind` values).
        count: how many attempts.
        minute: the start of the minute bucket (history, `served()`); None in a worker's
            totals since it started (`WorkerInfo.served`).
    """

    group: str
    queue: str
    outcome: str
    count: int
    minute: datetime | None = None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """One worker process in the registry.

    Attributes:
        id: `host:pid:token`, unique per process start.
        host, pid: where it runs.
        version: the rota version it runs.
        started_at: when it registered.
        last_seen: its last refresh.
        dead_at: when it counts as dead unless it refreshes before (last_seen + a few
            lease periods).
        groups: its Worker Groups, with jobs in flight as of the last refresh.
        served: per group, Queue and outcome, the attempts it served since it started.
        alive: whether `dead_at` was still ahead at the time of the read.
        clock_offset: how far the worker's machine's clock ran ahead of the store's
            (negative: behind), as measured at its last refresh; rota's times follow the
            store's clock, so this is for the operator (a machine without time sync).
    """

    id: str
    host: str
    pid: int
    version: str
    started_at: datetime
    last_seen: datetime
    dead_at: datetime
    groups: tuple[WorkerGroupInfo, ...] = ()
    served: tuple[ServedCount, ...] = ()
    alive: bool = True
    clock_offset: timedelta = timedelta(0)

    @property
    def in_flight(self) -> int:
        return sum(group.in_flight for group in self.groups)


@dataclass(frozen=True, slots=True)
class QueueShare:
    """One Queue of a Worker Group in the fairness view.

    Attributes:
        queue: the Queue.
        weight: its weight (Weighted); None for Strict, or a Queue no longer in the policy.
        target_share: weight / sum of weights (0..1); None when there is no weight.
        served: attempts of it the group served in the window (every outcome).
        served_share: served / all the group served in the window; None if it served none.
        outcomes: `served` split by outcome name.
    """

    queue: str
    weight: int | None
    target_share: float | None
    served: int
    served_share: float | None
    outcomes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GroupFairness:
    """A Worker Group's served shares against its policy over a window.

    Attributes:
        group: the group's name.
        policy: its policy (as last registered), or None if no worker registered it.
        pool_size: its pool size per worker (0 if unknown).
        workers: alive workers running it now.
        in_flight: its jobs in flight now, all alive workers together.
        served: all it served in the window.
        since: the start of the window (a minute boundary).
        queues: per Queue, in the policy's order (Queues it served outside the current
            policy last).
        policy_changed_at: when the stored policy in force was set, if that was after
            the window's start: `since` is then the minute of that change, and the
            shares count what was served under it (`rota.core.serving.fairness_in_force`).
    """

    group: str
    policy: DispatchPolicy | None
    pool_size: int
    workers: int
    in_flight: int
    served: int
    since: datetime
    queues: tuple[QueueShare, ...]
    policy_changed_at: datetime | None = None


def fairness(
    groups: Iterable[WorkerGroupInfo],
    workers: Iterable[WorkerInfo],
    served: Iterable[ServedCount],
    since: datetime,
) -> list[GroupFairness]:
    """The fairness view, by group name.

    Args:
        groups: the groups as last registered (`Store.worker_groups()`); a live worker's
            own registration of a group wins over it.
        workers: the registry's rows (`Store.list_workers(now)`); dead ones are ignored.
        served: the history rows of the window (`Store.served_counts(since)`).
        since: the start of the window.
    """
    known: dict[str, WorkerGroupInfo] = {group.name: group for group in groups}
    alive_workers: defaultdict[str, int] = defaultdict(int)
    in_flight: defaultdict[str, int] = defaultdict(int)
    for worker in workers:
        if not worker.alive:
            continue
        for group in worker.groups:
            known[group.name] = group
            alive_workers[group.name] += 1
            in_flight[group.name] += group.in_flight
    by_queue: defaultdict[str, defaultdict[str, defaultdict[str, int]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(int))
    )
    for count in served:
        if count.minute is not None and count.minute < since:
            continue
        by_queue[count.group][count.queue][count.outcome] += count.count
    views: list[GroupFairness] = []
    for name in sorted(set(known) | set(by_queue)):
        info = known.get(name)
        policy = info.policy if info is not None else None
        weights: dict[str, int] = {}
        order: list[str] = []
        if policy is not None:
            order = list(policy.queues)
            if isinstance(policy, Weighted):
                weights = dict(policy.weights)
        served_queues: dict[str, defaultdict[str, int]] = by_queue.get(name, {})
        order += sorted(queue for queue in served_queues if queue not in order)
        total_weight = sum(weights.values())
        totals = {queue: sum(served_queues.get(queue, {}).values()) for queue in order}
        group_total = sum(totals.values())
        shares = tuple(
            QueueShare(
                queue=queue,
                weight=weights.get(queue),
                target_share=(weights[queue] / total_weight
                              if queue in weights and total_weight else None),
                served=totals[queue],
                served_share=totals[queue] / group_total if group_total else None,
                outcomes=dict(served_queues.get(queue, {})),
            )
            for queue in order
        )
        views.append(GroupFairness(
            group=name, policy=policy, pool_size=info.pool_size if info is not None else 0,
            workers=alive_workers.get(name, 0), in_flight=in_flight.get(name, 0),
            served=group_total, since=since, queues=shares,
        ))
    return views


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A job a live worker runs now (leased to one of its groups).

    Attributes:
        worker: the worker's id; group: its Worker Group holding the lease.
        job: the leased job (`started_at`: its claim).
        running_for: how long since its claim, at the time of the read (never negative).
    """

    worker: str
    group: str
    job: JobRecord
    running_for: timedelta


def in_flight_owners(workers: Iterable[WorkerInfo]) -> list[str]:
    """The lease owner ids of the live workers' groups (`Store.jobs_in_flight` takes
    them); a dead worker holds nothing it can finish, so it is left out."""
    return [group.owner for worker in workers if worker.alive
            for group in worker.groups if group.owner]


def running_jobs(workers: Iterable[WorkerInfo], jobs: Iterable[JobRecord],
                 now: datetime) -> list[RunningJob]:
    """`jobs` (the leased jobs of `in_flight_owners(workers)`) matched to their worker and
    group, in the order given; a job whose owner is no live worker's group is left out."""
    owners = {group.owner: (worker.id, group.name) for worker in workers if worker.alive
              for group in worker.groups if group.owner}
    running: list[RunningJob] = []
    for job in jobs:
        holder = owners.get(job.lease_owner or "")
        if holder is None:
            continue
        started = job.started_at or now
        running.append(RunningJob(holder[0], holder[1], job,
                                  max(timedelta(0), now - started)))
    return running


# -- JSON shapes (`rota workers --json`; the dashboard's /api/workers uses the same) ------


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def group_to_json(group: WorkerGroupInfo) -> dict[str, object]:
    kind, queues, weights = policy_parts(group.policy)
    return {
        "name": group.name, "policy": kind, "queues": list(queues),
        "weights": None if weights is None else list(weights),
        "pool_size": group.pool_size, "in_flight": group.in_flight, "owner": group.owner,
        "seen_at": _time(group.seen_at),
    }


def served_to_json(count: ServedCount) -> dict[str, object]:
    return {"group": count.group, "queue": count.queue, "outcome": count.outcome,
            "count": count.count, "minute": _time(count.minute)}


def worker_to_json(worker: WorkerInfo) -> dict[str, object]:
    return {
        "id": worker.id, "host": worker.host, "pid": worker.pid, "version": worker.version,
        "alive": worker.alive, "started_at": _time(worker.started_at),
        "last_seen": _time(worker.last_seen), "dead_at": _time(worker.dead_at),
        "in_flight": worker.in_flight,
        "clock_offset_s": worker.clock_offset.total_seconds(),
        "groups": [group_to_json(group) for group in worker.groups],
        "served": [served_to_json(count) for count in worker.served],
    }


def running_to_json(running: RunningJob) -> dict[str, object]:
    job = running.job
    return {"worker": running.worker, "group": running.group, "id": job.id,
            "name": job.name, "queue": job.queue, "attempt": job.attempt,
            "started_at": _time(job.started_at),
            "running_for_s": running.running_for.total_seconds()}


def fairness_to_json(view: GroupFairness) -> dict[str, object]:
    kind: str | None = None
    if view.policy is not None:
        kind = policy_parts(view.policy)[0]
    return {
        "group": view.group, "policy": kind, "pool_size": view.pool_size,
        "workers": view.workers, "in_flight": view.in_flight, "served": view.served,
        "since": _time(view.since), "policy_changed_at": _time(view.policy_changed_at),
        "queues": [
            {"queue": q.queue, "weight": q.weight, "target_share": q.target_share,
             "served": q.served, "served_share": q.served_share, "outcomes": q.outcomes}
            for q in view.queues
        ],
    }
