"""Where the dashboard's Worker Group view gets its facts: the one adapter to change when
the source changes.

`observe_groups(...)` answers, for every Worker Group known, its policy, pool size, live
workers, jobs in flight and the jobs it served per Queue over the last minutes. Groups
come from the worker registry in the store (every group a live or recently stopped worker
ran, with the policy it ran), and from `--app` when given (groups defined but never run
show with nothing served). Nothing else in the dashboard knows where these facts live.

Imports rota's public API and the store contract only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rota.core.groups import WorkerGroupOptions
from rota.core.policy import DispatchPolicy
from rota.store import Store

__all__ = ["GroupObservation", "observe_groups"]


@dataclass(frozen=True, slots=True)
class GroupObservation:
    """One Worker Group as the dashboard shows it.

    Attributes:
        name: the group's name.
        policy: its Dispatch Policy.
        pool_size: Workers per process running it.
        workers: live worker processes running it now.
        in_flight: its jobs running now, all those processes together.
        served: jobs it served per Queue over the window (every outcome counts).
        busy_minutes: minutes of the window in which it served at least one job (the
            served rate divides by these, so an idle stretch does not dilute it).
        window: how far back `served` looks.
    """

    name: str
    policy: DispatchPolicy
    pool_size: int
    workers: int = 0
    in_flight: int = 0
    served: dict[str, int] = field(default_factory=dict)
    busy_minutes: int = 0
    window: timedelta = timedelta(minutes=60)

    @property
    def served_total(self) -> int:
        return sum(self.served.values())

    @property
    def rate_per_s(self) -> float | None:
        """Jobs served per second while busy; None without history."""
        if self.busy_minutes <= 0 or self.served_total <= 0:
            return None
        return self.served_total / (self.busy_minutes * 60.0)


def observe_groups(
    store: Store, now: datetime, window: timedelta,
    defined: Sequence[WorkerGroupOptions] = (),
) -> list[GroupObservation]:
    """Every Worker Group known, sorted by name (see module doc).

    Args:
        store: the store the workers use (read-only is enough).
        now: the current time (served history counts minutes after `now - window`).
        window: how far back the served counts look.
        defined: groups of an App given with `--app` (shown even if never run).
    """
    observed: dict[str, GroupObservation] = {}
    for options in defined:
        observed.setdefault(options.name, GroupObservation(
            options.name, options.policy, options.pool_size, window=window))
    return [observed[name] for name in sorted(observed)]
