"""Dispatch planning: which Queues a pass claims from, how many jobs each, in what order.

Theory of operation
-------------------
A Worker Group owns one `Dispatcher` for its life. Each pass asks it for a `PassPlan`
sized to the group's free capacity, then drives the plan sans-I/O:

    plan = dispatcher.begin_pass(free)
    while requests := plan.next_claims():
        for request in requests:
            plan.claimed(request, store.claim(request.queues, request.limit, ...))
            # or plan.claim_failed(request) when the claim raised
    for item in plan.dispatch_order():   # slot order
        plan.serve()                     # charge the dispatcher for this job, then run it

Strict issues one claim over its ordered Queues, sized to the free capacity, and dispatches
the jobs in the order the store returned them (the first Queue's due jobs first).

Weighted is smooth weighted round-robin (nginx). One *step* over the Queues taking part:
each one's credit += its weight; the highest credit wins (ties to the lower declaration
index); the winner's credit -= the sum of the weights that took part. A pass:

1. simulates its free slots on a scratch copy of the credits (all Queues take part, none is
   known empty yet) and claims each Queue's share with one claim per Queue;
2. a Queue whose claim returned fewer jobs than asked is *found empty*: once its claimed
   jobs are used up it takes no part in further steps, so its credit stands still (this is
   what bounds an idle Queue's catch-up). The pass re-simulates from the real credits with
   that knowledge and claims the unfilled slots from the Queues still eligible (reflow),
   round after round until the pass is full or no Queue is left to ask. A round that does
   not fill the pass finds at least one more Queue empty. A pass may issue at most
   2 x (served Queues) claims; when a proportional re-plan could leave too few claims to
   finish, the round instead asks one Queue (the one with the largest share) for all the
   room, which either fills the pass or finds that Queue empty. So the pass always fills
   from due work wherever it exists, within the claim bound;
3. the final simulation, over exactly the jobs claimed, gives the slot order and one `Step`
   per job. The persistent credits move only when `serve()` charges a step, one per job
   actually dispatched. A Queue whose claim failed or was never issued is not found empty:
   it keeps taking part (and gaining credit) but is charged nothing.

With every Queue backlogged no Queue is ever found empty, every step has all Queues taking
part, and the served sequence is exactly the nginx sequence, whatever the pool size.

Pure: no I/O, no clock, no asyncio, no randomness.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar

from rota.core.policy import DispatchPolicy, Strict, Weighted

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    """One claim a pass wants issued: up to `limit` due jobs from `queues`, in that order."""

    queues: tuple[str, ...]
    limit: int


@dataclass(frozen=True, slots=True)
class Step:
    """One smooth weighted round-robin step: who took part, and who was served."""

    participants: tuple[int, ...]
    winner: int


def apply_step(weights: Sequence[int], credits: list[int], step: Step) -> None:
    """Advance `credits` in place by one step (the nginx update)."""
    total = 0
    for index in step.participants:
        credits[index] += weights[index]
        total += weights[index]
    credits[step.winner] -= total


def swrr_sequence(weights: Sequence[int], count: int) -> list[int]:
    """The first `count` winners of smooth weighted round-robin with every Queue backlogged,
    from zero credits. The reference sequence the planner must reproduce."""
    credits = [0] * len(weights)
    everyone = tuple(range(len(weights)))
    winners: list[int] = []
    for _ in range(count):
        best = max(everyone, key=lambda i: (credits[i] + weights[i], -i))
        apply_step(weights, credits, Step(everyone, best))
        winners.append(best)
    return winners


class _Supply(Enum):
    OPEN = "open"  # claimed in full (or not yet claimed): may have more due jobs
    EMPTY = "empty"  # a claim returned fewer than asked: found empty in this pass
    BLOCKED = "blocked"  # its claim failed or was never issued: gets nothing more this pass


def _simulate(
    weights: Sequence[int],
    credits: Sequence[int],
    held: Sequence[int],
    supply: Sequence[_Supply],
    room: int,
) -> tuple[list[Step], list[int]]:
    """Simulate steps on a scratch copy of `credits` until no Queue can be served.

    `held[i]` jobs of Queue i are already claimed and must all get a slot. A Queue whose
    held jobs are used up may take `room` more slots in total (to be claimed) if its supply
    is OPEN; an EMPTY one leaves the steps once its held jobs are used up; a BLOCKED one, or
    an OPEN one when there is no room left, keeps taking part but cannot be served.

    Returns the steps in slot order and, per Queue, the number of slots still to claim.
    """
    count = len(weights)
    scratch = list(credits)
    left = list(held)
    wanted = [0] * count
    is_open = [s is _Supply.OPEN for s in supply]
    is_empty = [s is _Supply.EMPTY for s in supply]
    participants = tuple(i for i in range(count) if not (is_empty[i] and left[i] == 0))
    total = sum(weights[i] for i in participants)
    steps: list[Step] = []
    while participants:
        # The winner: highest credit after this step's increment among the Queues that
        # can be served; ties to the lower index (strict > while scanning in order).
        winner = -1
        best = 0
        for i in participants:
            if left[i] > 0 or (room > 0 and is_open[i]):
                value = scratch[i] + weights[i]
                if winner < 0 or value > best:
                    winner, best = i, value
        if winner < 0:
            break
        for i in participants:
            scratch[i] += weights[i]
        scratch[winner] -= total
        steps.append(Step(participants, winner))
        if left[winner] > 0:
            left[winner] -= 1
            if left[winner] == 0 and is_empty[winner]:
                participants = tuple(i for i in participants if i != winner)
                total -= weights[winner]
        else:
            wanted[winner] += 1
            room -= 1
    return steps, wanted


class PassPlan(Generic[T]):
    """One pass of one Worker Group, driven by the caller (see the module docstring)."""

    def next_claims(self) -> list[ClaimRequest]:
        """The claims to issue now; an empty list when the pass has claimed all it will."""
        raise NotImplementedError  # pragma: no cover

    def claimed(self, request: ClaimRequest, items: Sequence[T]) -> None:
        """Record what a claim returned, in the order the store returned it."""
        raise NotImplementedError  # pragma: no cover

    def claim_failed(self, request: ClaimRequest) -> None:
        """Record that a claim raised: the pass is cut short, and the claim charges nothing."""
        raise NotImplementedError  # pragma: no cover

    def cut_short(self) -> None:
        """Issue no further claims (shutdown); what was claimed is still dispatched."""
        raise NotImplementedError  # pragma: no cover

    def dispatch_order(self) -> list[T]:
        """Every claimed item, in slot order. Ends the claiming."""
        raise NotImplementedError  # pragma: no cover

    def serve(self) -> None:
        """Charge the group's dispatch state for the next item in dispatch order."""
        raise NotImplementedError  # pragma: no cover

    def skip(self) -> None:
        """Pass over the next item in dispatch order without charging anything: it was
        handed back unserved (the runtime holds back a second suspect job, say)."""
        raise NotImplementedError  # pragma: no cover

    @property
    def claims_issued(self) -> int:
        """Claims answered so far (returned or failed)."""
        raise NotImplementedError  # pragma: no cover


def _check_count(request: ClaimRequest, items: Sequence[object]) -> None:
    if len(items) > request.limit:
        raise ValueError(
            f"a claim for {request.limit} jobs returned {len(items)}; the store broke the "
            "claim contract"
        )


class _StrictPass(PassPlan[T]):
    def __init__(self, queues: tuple[str, ...], free: int) -> None:
        self._pending = [ClaimRequest(queues, free)] if free > 0 else []
        self._items: list[T] = []
        self._issued = 0

    def next_claims(self) -> list[ClaimRequest]:
        pending, self._pending = self._pending, []
        return pending

    def claimed(self, request: ClaimRequest, items: Sequence[T]) -> None:
        _check_count(request, items)
        self._issued += 1
        self._items.extend(items)

    def claim_failed(self, request: ClaimRequest) -> None:
        self._issued += 1
        self._pending = []

    def cut_short(self) -> None:
        self._pending = []

    def dispatch_order(self) -> list[T]:
        self._pending = []
        return list(self._items)

    def serve(self) -> None:
        pass  # Strict keeps no dispatch state.

    def skip(self) -> None:
        pass

    @property
    def claims_issued(self) -> int:
        return self._issued


class _WeightedPass(PassPlan[T]):
    def __init__(self, dispatcher: WeightedDispatcher, free: int) -> None:
        self._dispatcher = dispatcher
        count = len(dispatcher.queues)
        self._free = free
        self._held: list[deque[T]] = [deque() for _ in range(count)]
        self._supply = [_Supply.OPEN] * count
        self._round = 0
        self._outstanding: set[int] = set()
        self._stopped = free <= 0
        self._issued = 0
        self._steps: list[Step] | None = None
        # The last round's simulation, and whether every claim of that round came back
        # full: then it is already the final slot order (no need to simulate again).
        self._planned: list[Step] | None = None
        self._planned_exact = False
        self._served = 0

    def _index(self, request: ClaimRequest) -> int:
        return self._dispatcher.queues.index(request.queues[0])

    def next_claims(self) -> list[ClaimRequest]:
        if self._stopped or self._outstanding:
            return []
        held = [len(items) for items in self._held]
        room = self._free - sum(held)
        if room <= 0:
            return []
        steps, wanted = _simulate(
            self._dispatcher.weights, self._dispatcher.credits, held, self._supply, room
        )
        shares = [(index, count) for index, count in enumerate(wanted) if count > 0]
        budget = 2 * len(self._dispatcher.queues) - self._issued
        if not shares or budget <= 0:
            return []
        self._planned = steps
        self._planned_exact = True
        if self._round > 0:
            still_open = sum(1 for supply in self._supply if supply is _Supply.OPEN)
            # Invariant: budget >= still_open before every reflow round. A proportional
            # round that comes back short leaves at most still_open - 1 Queues to ask, so
            # it is affordable only if that many claims remain after it; otherwise one
            # claim for all the room keeps the invariant (it fills, or finds one empty).
            if budget - len(shares) < still_open - 1:
                index, _ = max(shares, key=lambda share: (share[1], -share[0]))
                shares = [(index, room)]
                self._planned_exact = False
        self._round += 1
        requests: list[ClaimRequest] = []
        for index, count in shares:
            requests.append(ClaimRequest((self._dispatcher.queues[index],), count))
            self._outstanding.add(index)
        return requests

    def claimed(self, request: ClaimRequest, items: Sequence[T]) -> None:
        _check_count(request, items)
        self._issued += 1
        index = self._index(request)
        self._outstanding.discard(index)
        self._held[index].extend(items)
        if len(items) < request.limit:
            self._supply[index] = _Supply.EMPTY
            self._planned_exact = False

    def claim_failed(self, request: ClaimRequest) -> None:
        self._issued += 1
        index = self._index(request)
        self._outstanding.discard(index)
        self._supply[index] = _Supply.BLOCKED
        self._planned_exact = False
        self.cut_short()

    def cut_short(self) -> None:
        self._stopped = True

    def _final_steps(self) -> list[Step]:
        if self._steps is None and self._planned_exact and not self._outstanding:
            self._stopped = True
            self._steps = self._planned  # every claim came back full: the plan stands
        if self._steps is None:
            self._stopped = True
            supply = [
                _Supply.BLOCKED if s is _Supply.OPEN else s for s in self._supply
            ]
            held = [len(items) for items in self._held]
            self._steps, _ = _simulate(
                self._dispatcher.weights, self._dispatcher.credits, held, supply, 0
            )
        return self._steps

    def dispatch_order(self) -> list[T]:
        held = [deque(items) for items in self._held]
        return [held[step.winner].popleft() for step in self._final_steps()]

    def serve(self) -> None:
        steps = self._final_steps()
        if self._served >= len(steps):
            raise RuntimeError("serve() called more often than the pass dispatched jobs")
        apply_step(self._dispatcher.weights, self._dispatcher.credits, steps[self._served])
        self._served += 1

    def skip(self) -> None:
        if self._served >= len(self._final_steps()):
            raise RuntimeError("skip() called more often than the pass dispatched jobs")
        self._served += 1

    @property
    def claims_issued(self) -> int:
        return self._issued


class Dispatcher:
    """A Worker Group's dispatch state, kept for the group's life."""

    def __init__(self, policy: DispatchPolicy) -> None:
        self.policy = policy

    def begin_pass(self, free: int) -> PassPlan[T]:
        """Plan one pass into `free` free Worker slots (0 means no claim at all)."""
        raise NotImplementedError  # pragma: no cover

    @staticmethod
    def for_policy(policy: DispatchPolicy) -> Dispatcher:
        """The dispatcher for `policy`, after validating it.

        Raises:
            ValueError: if the policy's values are invalid (see `DispatchPolicy.validate`).
        """
        policy.validate()
        if isinstance(policy, Strict):
            return StrictDispatcher(policy)
        if isinstance(policy, Weighted):
            return WeightedDispatcher(policy)
        raise TypeError(f"unknown dispatch policy {policy!r}")  # pragma: no cover


class StrictDispatcher(Dispatcher):
    def __init__(self, policy: Strict) -> None:
        super().__init__(policy)
        self.queues = policy.queues

    def begin_pass(self, free: int) -> PassPlan[T]:
        return _StrictPass(self.queues, free)


class WeightedDispatcher(Dispatcher):
    """Holds the smooth weighted round-robin credits, one per Queue, in declaration order."""

    def __init__(self, policy: Weighted) -> None:
        super().__init__(policy)
        self.queues = policy.queues
        self.weights = tuple(weight for _, weight in policy.weights)
        self.credits = [0] * len(self.queues)

    def begin_pass(self, free: int) -> PassPlan[T]:
        return _WeightedPass(self, free)
