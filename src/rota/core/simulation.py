"""The dispatch simulator: the exact claim schedule of a policy, without any store.

Feeds the very `Dispatcher` the worker uses with an in-memory backlog of job counts per
Queue, pass after pass, as if every dispatched job finished before the next pass. What it
prints is what a Worker Group with that policy and pool size does.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rota.core.dispatch import Dispatcher, PassPlan
from rota.core.policy import DispatchPolicy, Weighted


@dataclass(frozen=True, slots=True)
class SimulatedClaim:
    queues: tuple[str, ...]
    limit: int
    got: int


@dataclass(frozen=True, slots=True)
class SimulatedPass:
    claims: tuple[SimulatedClaim, ...]
    order: tuple[str, ...]  # the Queue of each dispatched job, in slot order


@dataclass(slots=True)
class Simulation:
    policy: DispatchPolicy
    pool_size: int
    passes: list[SimulatedPass] = field(default_factory=list)

    def served(self) -> dict[str, int]:
        counts = dict.fromkeys(self.policy.queues, 0)
        for one in self.passes:
            for queue in one.order:
                counts[queue] += 1
        return counts

    def target_shares(self) -> dict[str, float] | None:
        """Each Queue's configured share of the weights (Weighted only)."""
        if not isinstance(self.policy, Weighted):
            return None
        total = sum(weight for _, weight in self.policy.weights)
        return {queue: weight / total for queue, weight in self.policy.weights}


def simulate(
    policy: DispatchPolicy,
    pool_size: int,
    passes: int,
    backlog: Mapping[str, int] | None = None,
) -> Simulation:
    """Run `passes` passes of a group with `pool_size` free Workers each pass.

    Args:
        backlog: due jobs per Queue at the start; a Queue left out has unlimited work.

    Raises:
        ValueError: for an invalid policy, pool_size < 1, passes < 0, or a backlog that
            names a Queue the policy does not serve or a negative count.
    """
    if pool_size < 1:
        raise ValueError(f"pool size must be at least 1; got {pool_size}")
    if passes < 0:
        raise ValueError(f"passes must be zero or more; got {passes}")
    dispatcher = Dispatcher.for_policy(policy)
    remaining: dict[str, int | None] = dict.fromkeys(policy.queues)
    for queue, count in (backlog or {}).items():
        if queue not in remaining:
            raise ValueError(
                f"backlog names Queue {queue!r}, which the policy does not serve "
                f"({', '.join(policy.queues)})"
            )
        if count < 0:
            raise ValueError(f"backlog of Queue {queue!r} must be >= 0; got {count}")
        remaining[queue] = count
    result = Simulation(policy, pool_size)
    for _ in range(passes):
        plan: PassPlan[str] = dispatcher.begin_pass(pool_size)
        claims: list[SimulatedClaim] = []
        while requests := plan.next_claims():
            for request in requests:
                taken: list[str] = []
                for queue in request.queues:
                    have = remaining[queue]
                    want = request.limit - len(taken)
                    take = want if have is None else min(want, have)
                    if have is not None:
                        remaining[queue] = have - take
                    taken.extend([queue] * take)
                claims.append(SimulatedClaim(request.queues, request.limit, len(taken)))
                plan.claimed(request, taken)
        order = plan.dispatch_order()
        for _job in order:
            plan.serve()
        result.passes.append(SimulatedPass(tuple(claims), tuple(order)))
    return result
