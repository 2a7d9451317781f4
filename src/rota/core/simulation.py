"""The dispatch simulator: the exact claim schedule of a policy, without any store.

Drives the very dispatcher a Worker Group uses (remembering Queues found empty across
passes) exactly as the group does: each round of the plan's claims becomes the round trip
`PassPlan.round_trip` describes, answered by an in-memory backlog of job counts per Queue
the way the store contract answers a claim (its due Queues, its paused or limited ones),
and recorded with `PassPlan.record_round`. Passes follow one another as if every
dispatched job finished before the next, at one instant (so no poll interval passes). What
it prints is what a group with that policy and pool size does under `run_until_idle()`.
Queue controls apply as the stores apply them (`rota.core.queue_controls.room`): a paused
Queue gives nothing, and a Queue with a limit gives at most its limit per pass (its jobs
claimed earlier in the pass count as leased; those of earlier passes have finished).

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rota.core.dispatch import PassPlan, RoundTrip, for_policy
from rota.core.policy import DispatchPolicy, Weighted
from rota.core.queue_controls import QueueSettings, room, validate_queue_limit


@dataclass(frozen=True, slots=True)
class SimulatedClaim:
    """One claim of a round: up to `limit` jobs from `queues` (one Queue, or a sweep's
    several in order); `got` of them were due."""

    queues: tuple[str, ...]
    limit: int
    got: int


@dataclass(frozen=True, slots=True)
class SimulatedRoundTrip:
    """One store round trip: its claims (none for a probe alone), the Queues it probed,
    and those of them the store said have due work left."""

    claims: tuple[SimulatedClaim, ...]
    probe: tuple[str, ...]
    due: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SimulatedPass:
    round_trips: tuple[SimulatedRoundTrip, ...]
    order: tuple[str, ...]  # the Queue of each dispatched job, in slot order

    @property
    def claims(self) -> tuple[SimulatedClaim, ...]:
        """Every claim of the pass, in the order issued."""
        return tuple(claim for trip in self.round_trips for claim in trip.claims)


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
    dispatcher = for_policy(policy, remember_empty=True)
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
    backlog_store = _Backlog(remaining, settings)
    for _ in range(passes):
        # The jobs here are their Queues' names, which is each job's `queue_of`.
        plan: PassPlan[str] = dispatcher.begin_pass(pool_size, queue_of=str)
        backlog_store.leased = dict.fromkeys(policy.queues, 0)
        trips: list[SimulatedRoundTrip] = []
        while requests := plan.next_claims():
            trip = plan.round_trip(requests)
            jobs, due, controlled = backlog_store.claim(trip)
            plan.record_round(requests, jobs, due=due, controlled=controlled)
            got = Counter(jobs)
            claims = tuple(
                SimulatedClaim(request.queues, request.limit,
                               sum(got[queue] for queue in request.queues))
                for request in requests if not request.probe)
            trips.append(SimulatedRoundTrip(claims, trip.probe,
                                            tuple(q for q in trip.probe if q in due)))
        order = plan.dispatch_order()
        for _job in order:
            plan.serve()
        result.passes.append(SimulatedPass(tuple(trips), tuple(order)))
    return result


@dataclass(slots=True)
class _Backlog:
    """Due jobs per Queue (None: unlimited), answering a round trip as the store contract
    answers `claim`: each Queue's jobs in turn, within its room under its settings."""

    remaining: dict[str, int | None]
    settings: dict[str, QueueSettings]
    leased: dict[str, int] = field(default_factory=dict)  # this pass's, not yet finished

    def claim(self, trip: RoundTrip) -> tuple[list[str], set[str], set[str]]:
        """The jobs (their Queues' names), the probed Queues with due work left, and the
        claim's paused or limited Queues."""
        caps = (zip(trip.queues, trip.limits, strict=True) if trip.limits is not None
                else ((queue, trip.limit) for queue in trip.queues))
        jobs: list[str] = []
        controlled: set[str] = set()
        for queue, cap in caps:
            settings = self.settings[queue]
            if not settings.is_default:
                controlled.add(queue)
            want = room(settings, self.leased[queue], min(cap, trip.limit - len(jobs)))
            have = self.remaining[queue]
            take = want if have is None else min(want, have)
            if have is not None:
                self.remaining[queue] = have - take
            self.leased[queue] += take
            jobs.extend([queue] * take)
        due = {queue for queue in trip.probe
               if not self.settings[queue].paused and self.remaining[queue] != 0}
        return jobs, due, controlled
