"""The dispatch simulator: the exact claim schedule of a policy, without any store.

Drives the very dispatcher a Worker Group uses (remembering Queues found empty across
passes) exactly as the group does: each round of the plan's claims becomes the round trip
`PassPlan.round_trip` describes, answered by an in-memory backlog of job counts per Queue
the way the store contract answers a claim (its due Queues, its paused or limited ones),
and recorded with `PassPlan.record_round`. Passes follow one another as if every
dispatched job finished before the next. What it prints is what a group with that policy
and pool size does under `run_until_idle()`. Queue controls apply as the stores apply them
(`rota.core.queue_controls.room`): a paused Queue gives nothing, and a Queue with a limit
gives at most its limit per pass (its jobs claimed earlier in the pass count as leased;
those of earlier passes have finished).

Virtual time, for rate limits (`rota.core.rates`, the stores' own `available` and `take`):
the first pass claims at `start`; a pass that dispatched jobs is followed by the next one
`pass_every` later (its jobs take that long, side by side); a pass that dispatched
nothing is followed at the same instant while the group has Queues to probe, else (the
group is idle) at the first instant a rated Queue that has due jobs, is not paused and
has room gets a token again, as an idle worker sleeps until its next token. Nothing else
depends on the time: without rates the schedule is the same for any `pass_every`. So a
rated Queue is claimed at most `burst + jobs * T / per` times over the passes of any span
T, and its turns go to the other Queues meanwhile (work-conserving). The group re-probes
no Queue for its poll interval (a Queue found empty here stays empty: there is nothing to
find), so the drive this equals is one whose poll interval is longer than the time
simulated.

Pure: no I/O, no clock (time is `start` and the arithmetic above).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rota.core.clock import DEFAULT_VIRTUAL_START
from rota.core.dispatch import PassPlan, RoundTrip, for_policy
from rota.core.policy import DispatchPolicy, Weighted, over_members
from rota.core.queue_controls import QueueSettings, room, validate_queue_limit
from rota.core.rates import QueueRate, RatedQueue, available, check_rate, next_token_at, take

PASS_EVERY = timedelta(seconds=1)
"""The virtual time a pass that dispatched jobs takes, unless told otherwise."""


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
    at: timedelta = timedelta(0)  # when its claims ran, after the simulation's start
    # The rated Queues a claim of the pass got fewer jobs from than it asked and they had
    # due, for want of tokens (in policy order).
    starved: tuple[str, ...] = ()

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
    rates: dict[str, QueueRate] = field(default_factory=dict)
    pass_every: timedelta = PASS_EVERY

    def starved_at(self, queue: str) -> list[timedelta]:
        """When (after the start) the passes ran in which `queue` was out of tokens."""
        return [one.at for one in self.passes if queue in one.starved]

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
    rates: Mapping[str, QueueRate] | None = None,
    pass_every: timedelta = PASS_EVERY,
    start: datetime = DEFAULT_VIRTUAL_START,
) -> Simulation:
    """Run `passes` passes of a group with `pool_size` free Workers each pass.

    Args:
        backlog: due jobs per Queue at the start; a Queue left out has unlimited work. The
            members of the policy's families are the Queues these arguments name.
        paused: Queues that are paused (claims take nothing from them).
        limits: per Queue, the most of its jobs leased at once (None: no limit).
        rates: per Queue, its rate limit; each bucket starts full at `start`.
        pass_every: the virtual time from a pass that dispatched jobs to the next (see
            the module docstring for the passes that dispatched none).
        start: the instant of the first pass (aware).

    Raises:
        ValueError: for an invalid policy, pool_size < 1, passes < 0, a backlog, pause,
            limit or rate that names a Queue the policy does not serve, a negative count,
            a negative limit, a rate out of range or a negative `pass_every`.
        TypeError: for a limit that is not an int, or a rate that is not a `QueueRate`.
    """
    if pool_size < 1:
        raise ValueError(f"pool size must be at least 1; got {pool_size}")
    if passes < 0:
        raise ValueError(f"passes must be zero or more; got {passes}")
    if pass_every < timedelta(0):
        raise ValueError(f"pass_every must be zero or more; got {pass_every}")
    # A family (rota.core.families) serves the members the simulation names.
    policy.validate()
    paused = tuple(paused)
    policy = over_members(policy, {*(backlog or {}), *paused, *(limits or {}), *(rates or {})})
    dispatcher = for_policy(policy, remember_empty=True, validate=False)
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
    buckets: dict[str, RatedQueue] = {}
    for queue, rate in (rates or {}).items():
        served(queue, "rate")
        valid = check_rate(rate)
        if valid is not None:
            buckets[queue] = (valid, None)
    result = Simulation(
        policy, pool_size, paused=tuple(q for q in policy.queues if settings[q].paused),
        limits={q: settings[q].limit for q in policy.queues if settings[q].limit is not None},
        rates={q: buckets[q][0] for q in policy.queues if q in buckets},
        pass_every=pass_every,
    )
    backlog_store = _Backlog(remaining, settings, buckets)
    now = start
    for _ in range(passes):
        # The jobs here are their Queues' names, which is each job's `queue_of`.
        plan: PassPlan[str] = dispatcher.begin_pass(pool_size, queue_of=str)
        backlog_store.leased = dict.fromkeys(policy.queues, 0)
        backlog_store.starved = set()
        trips: list[SimulatedRoundTrip] = []
        while requests := plan.next_claims():
            trip = plan.round_trip(requests)
            jobs, due, controlled = backlog_store.claim(trip, now)
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
        result.passes.append(SimulatedPass(
            tuple(trips), tuple(order), at=now - start,
            starved=tuple(q for q in policy.queues if q in backlog_store.starved)))
        if order:
            now += pass_every
        elif not dispatcher.probe_pending:
            now = backlog_store.next_token(now) or now
    return result


@dataclass(slots=True)
class _Backlog:
    """Due jobs per Queue (None: unlimited), answering a round trip as the store contract
    answers `claim`: each Queue's jobs in turn, within its room under its settings."""

    remaining: dict[str, int | None]
    settings: dict[str, QueueSettings]
    buckets: dict[str, RatedQueue] = field(default_factory=dict)
    leased: dict[str, int] = field(default_factory=dict)  # this pass's, not yet finished
    starved: set[str] = field(default_factory=set)  # this pass's, out of tokens

    def claim(self, trip: RoundTrip, now: datetime) -> tuple[list[str], set[str], set[str]]:
        """The jobs (their Queues' names), the probed Queues with due work left, and the
        claim's paused, limited or rated Queues; a rated Queue's bucket gives a token per
        job and no more than it holds at `now`."""
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
            rated = self.buckets.get(queue)
            if rated is not None:
                controlled.add(queue)
                tokens = available(*rated, now)
                if tokens < (want if have is None else min(want, have)):
                    self.starved.add(queue)
                want = min(want, tokens)
            got = want if have is None else min(want, have)
            if have is not None:
                self.remaining[queue] = have - got
            if rated is not None and got:
                self.buckets[queue] = (rated[0], take(*rated, now, got))
            self.leased[queue] += got
            jobs.extend([queue] * got)
        due = {queue for queue in trip.probe
               if not self.settings[queue].paused and self.remaining[queue] != 0}
        return jobs, due, controlled

    def next_token(self, now: datetime) -> datetime | None:
        """When an idle group claims again: the first instant after `now` at which a
        rated Queue out of tokens, with due jobs, not paused and with room, has a token;
        None if no such Queue waits for one (nothing changes with time then)."""
        waits = [next_token_at(*rated, now) for queue, rated in self.buckets.items()
                 if self.remaining[queue] != 0 and not self.settings[queue].paused
                 and room(self.settings[queue], 0, 1) and not available(*rated, now)]
        return min(waits, default=None)
