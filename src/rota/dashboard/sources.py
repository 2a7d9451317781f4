"""Where the dashboard's Worker Group view gets its facts: the one adapter to change when
the source changes.

`observe_groups(...)` answers, for every Worker Group known, its policy, pool size, live
workers, jobs in flight and the jobs it served per Queue over the last minutes. Groups
come from the worker registry in the store (every group a live or recently stopped worker
ran), and from `--app` when given (groups defined but never run show with nothing
served); each shows its policy in force: the stored one (`App.set_group_policy`), else
the code's (rota.core.serving). Nothing else in the dashboard knows where these facts
live.

Imports rota's public API and the store contract only.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rota.core.group_policies import StoredPolicy
from rota.core.groups import WorkerGroupOptions
from rota.core.policy import DispatchPolicy
from rota.core.serving import fairness_in_force, workers_in_force
from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo, minute_of
from rota.store import Store, StoreError, stored_policies

__all__ = ["GroupObservation", "Observation", "observe", "policies"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GroupObservation:
    """One Worker Group as the dashboard shows it.

    Attributes:
        name: the group's name.
        policy: its Dispatch Policy in force: the stored one (`App.set_group_policy`)
            when a worker can use it, else the code's (as a worker last registered it,
            or as `--app` defines it); None when only served history names the group.
        pool_size: Workers per process running it.
        workers: live worker processes running it now.
        in_flight: its jobs running now, all those processes together.
        served: jobs it served per Queue over the window (every outcome counts).
        busy_minutes: minutes of the window in which it served at least one job (the
            served rate divides by these, so an idle stretch does not dilute it).
        full_minutes, full_served: the busy minutes that were busy from start to end
            (a busy minute before and after, and not the minute in progress), and what
            the group served in them: the rate's best evidence.
        window: how far back `served` looks.
        stored: the stored policy in force (`App.set_group_policy`), None when the
            code's is in force; `unusable`: why a stored row is not in force, if so.
        since: where the served shares start: the window's start, or the minute of the
            stored policy's change when it changed within the window
            (`policy_changed_at`): the shares compare against the policy since then.
    """

    name: str
    policy: DispatchPolicy | None  # None: served Queues on record, but no registration
    pool_size: int
    workers: int = 0
    in_flight: int = 0
    served: dict[str, int] = field(default_factory=dict)
    busy_minutes: int = 0
    full_minutes: int = 0
    full_served: int = 0
    window: timedelta = timedelta(minutes=60)
    stored: StoredPolicy | None = None
    unusable: str | None = None
    since: datetime | None = None
    policy_changed_at: datetime | None = None

    @property
    def live(self) -> bool:
        """Whether a live worker runs the group now."""
        return self.workers > 0

    @property
    def served_total(self) -> int:
        return sum(self.served.values())

    @property
    def rate_per_s(self) -> float | None:
        """Jobs served per second: over its full busy minutes when it has any, else over
        every minute it served in (then a lower bound: the history is per whole minute,
        and a group busy for part of one reads slower); None without history."""
        if self.full_minutes > 0:
            return self.full_served / (self.full_minutes * 60.0)
        if self.busy_minutes <= 0 or self.served_total <= 0:
            return None
        return self.served_total / (self.busy_minutes * 60.0)

    @property
    def rate_note(self) -> str:
        """How `rate_per_s` was measured, for people."""
        if self.full_minutes > 0:
            return f"over its {self.full_minutes} fully busy minute(s) of the last " \
                f"{round(self.window.total_seconds() / 60)}"
        return "over the minutes it served in; a lower bound, with no fully busy minute " \
            "on record"


def busy_minutes(per_minute: dict[datetime, int], now: datetime) -> tuple[int, int, int]:
    """(busy minutes, full minutes, served in the full ones) of one group's history.

    A minute counts as full when the minutes before and after it were busy too and it is
    not the minute in progress: the group served from its start to its end.
    """
    busy = {minute for minute, count in per_minute.items() if count > 0}
    step = timedelta(minutes=1)
    current = minute_of(now)
    full = [m for m in busy if m != current and m - step in busy and m + step in busy]
    return len(busy), len(full), sum(per_minute[m] for m in full)


@dataclass(frozen=True, slots=True)
class Observation:
    """What the registry says at one moment: groups, worker rows, and the history rows."""

    groups: list[GroupObservation]
    workers: list[WorkerInfo]
    served: list[ServedCount]
    note: str | None = None  # why the registry could not be read, for people


def observe(
    store: Store, now: datetime, window: timedelta,
    defined: Sequence[WorkerGroupOptions] = (),
) -> Observation:
    """Every Worker Group known, sorted by name, with the worker rows (see module doc).

    Args:
        store: the store the workers use (read-only is enough).
        now: the current time; served counts cover the minutes from `now - window` on
            (whole minutes, the minute in progress included).
        window: how far back the served counts look.
        defined: groups of an App given with `--app` (shown even if never run; a worker's
            registration of a group of the same name wins).
    """
    since = minute_of(now - window)
    note = None
    try:
        registered = store.worker_groups()
        workers = store.list_workers(now)
        served = store.served_counts(since)
        stored = stored_policies(store)
    except StoreError as error:
        # A store whose schema predates the registry, opened read-only, cannot be
        # migrated by the dashboard: show what the App defines, and say why.
        logger.warning("rota dashboard: cannot read the worker registry: %s", error)
        registered, workers, served, stored = [], [], [], {}
        note = f"the worker registry cannot be read: {error}"
    known = {g.name: WorkerGroupInfo(g.name, g.policy, g.pool_size) for g in defined}
    known.update({g.name: g for g in registered})
    per_minute: defaultdict[str, defaultdict[datetime, int]] = defaultdict(
        lambda: defaultdict(int))
    for row in served:
        if row.minute is not None and row.minute >= since:
            per_minute[row.group][row.minute] += row.count
    groups = []
    for view in fairness_in_force(known.values(), workers, served, since, stored):
        busy, full, full_served = busy_minutes(per_minute[view.group], now)
        stored_row = stored.get(view.group)
        unusable = None if stored_row is None else _unusable(stored_row)
        groups.append(GroupObservation(
            name=view.group, policy=view.policy, pool_size=view.pool_size,
            workers=view.workers, in_flight=view.in_flight,
            served={share.queue: share.served for share in view.queues},
            busy_minutes=busy, full_minutes=full, full_served=full_served, window=window,
            stored=stored_row if unusable is None else None, unusable=unusable,
            since=view.since, policy_changed_at=view.policy_changed_at,
        ))
    return Observation(groups, workers_in_force(workers, stored), served, note)


def _unusable(row: StoredPolicy) -> str | None:
    """Why no worker can use the stored row (None: they can)."""
    try:
        row.policy()
    except ValueError as error:
        return str(error)
    return None


def policies(groups: Sequence[GroupObservation], *, live: bool) -> dict[str, DispatchPolicy]:
    """Group -> policy in force, the shape `rota.core.serving.serving_groups` takes: of the
    groups live workers run (`live`: who serves a Queue now), or of every group known
    (the start estimates, which also show a group `--app` defines before it runs)."""
    return {group.name: group.policy for group in groups
            if group.policy is not None and (group.live or not live)}
