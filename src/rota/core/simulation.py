"""The dispatch simulator: the exact claim schedule of a policy, without any store.

Feeds the very `Dispatcher` the worker uses (remembering Queues found empty across passes,
as a worker does) with an in-memory backlog of job counts per Queue, pass after pass, as if
every dispatched job finished before the next pass. What it
prints is what a Worker Group with that policy and pool size does. Queue controls apply
as the stores apply them (`rota.core.queue_controls.room`): a paused Queue gives nothing,
and a Queue with a limit gives at most its limit per pass (its jobs claimed earlier in the
pass count as leased; those of earlier passes have finished).

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rota.core.dispatch import Dispatcher, PassPlan
from rota.core.policy import DispatchPolicy, Weighted
from rota.core.queue_controls import QueueSettings, room, validate_queue_limit


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
    paused: tuple[str, ...] = ()
    limits: dict[str, int | None] = field(default_factory=dict)

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
    *,
    paused: Iterable[str] = (),
    limits: Mapping[str, int | None] | None = None,
) -> Simulation:
    """Run `passes` passes of a group with `pool_size` free Workers each pass.

    Args:
        backlog: due jobs per Queue at the start; a Queue left out has unlimited work.
        paused: Queues that are paused (claims take nothing from them).
        limits: per Queue, the most of its jobs leased at once (None: no limit).

    Raises:
        ValueError: for an invalid policy, pool_size < 1, passes < 0, a backlog, pause
            or limit that names a Queue the policy does not serve, a negative count, or
            a negative limit.
        TypeError: for a limit that is not an int.
    """
    if pool_size < 1:
        raise ValueError(f"pool size must be at least 1; got {pool_size}")
    if passes < 0:
        raise ValueError(f"passes must be zero or more; got {passes}")
    # The worker's dispatcher: it remembers Queues found empty across passes (a paused or
    # limited Queue is found empty for one pass only), so a pass asks only Queues that
    # may have due work, even with 10,000 Queues.
    dispatcher = Dispatcher.for_policy(policy, remember_empty=True)
    remaining: dict[str, int | None] = dict.fromkeys(policy.queues)

    def served(queue: str, what: str) -> str:
        if queue not in remaining:
            raise ValueError(
                f"{what} names Queue {queue!r}, which the policy does not serve "
                f"({', '.join(policy.queues)})"
            )
        return queue

    for queue, count in (backlog or {}).items():
        served(queue, "backlog")
        if count < 0:
            raise ValueError(f"backlog of Queue {queue!r} must be >= 0; got {count}")
        remaining[queue] = count
    settings = {queue: QueueSettings(queue) for queue in policy.queues}
    for queue in paused:
        settings[served(queue, "paused")] = QueueSettings(queue, paused=True)
    for queue, limit in (limits or {}).items():
        checked = validate_queue_limit(limit)
        served(queue, "limit")
        settings[queue] = QueueSettings(queue, paused=settings[queue].paused, limit=checked)
    result = Simulation(
        policy, pool_size, paused=tuple(q for q in policy.queues if settings[q].paused),
        limits={q: settings[q].limit for q in policy.queues if settings[q].limit is not None},
    )
    claimed_nothing = False
    for _ in range(passes):
        # As a worker does: a pass after one that claimed nothing first probes the Queues
        # held for empty (the backlog here only shrinks, so it finds none with work).
        # The jobs here are their Queues' names, which answers a sweep's `queue_of`.
        plan: PassPlan[str] = dispatcher.begin_pass(
            pool_size, recheck=claimed_nothing, queue_of=str)
        claims: list[SimulatedClaim] = []
        leased = dict.fromkeys(policy.queues, 0)  # this pass's claims, not yet finished
        while requests := plan.next_claims():
            if requests[0].probe:
                plan.probed(requests[0], [
                    queue for queue in requests[0].queues
                    if not settings[queue].paused and remaining[queue] != 0])
                continue
            for request in requests:
                taken: list[str] = []
                for queue in request.queues:
                    have = remaining[queue]
                    want = room(settings[queue], leased[queue], request.limit - len(taken))
                    take = want if have is None else min(want, have)
                    if have is not None:
                        remaining[queue] = have - take
                    leased[queue] += take
                    taken.extend([queue] * take)
                claims.append(SimulatedClaim(request.queues, request.limit, len(taken)))
                plan.claimed(request, taken, controlled=any(
                    not settings[queue].is_default for queue in request.queues))
        order = plan.dispatch_order()
        claimed_nothing = not order
        for _job in order:
            plan.serve()
        result.passes.append(SimulatedPass(tuple(claims), tuple(order)))
    return result
