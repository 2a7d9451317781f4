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
   round after round while a round finds a Queue empty, within a budget of
   2 x (served Queues) claims per pass. (A fixed limit of two rounds starves a Queue: with
   one free slot, two empty Queues ahead of it in credit use both rounds, pass after pass,
   since nothing served means no credit moves.);
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
    scratch = list(credits)
    left = list(held)
    wanted = [0] * len(weights)
    taking_part = [
        not (supply[i] is _Supply.EMPTY and left[i] == 0) for i in range(len(weights))
    ]
    steps: list[Step] = []
    while True:
        participants = tuple(i for i, part in enumerate(taking_part) if part)
        servable = [
            i for i in participants
            if left[i] > 0 or (supply[i] is _Supply.OPEN and room > 0)
        ]
        if not servable:
            return steps, wanted
        winner = max(servable, key=lambda i: (scratch[i] + weights[i], -i))
        step = Step(participants, winner)
        apply_step(weights, scratch, step)
        steps.append(step)
        if left[winner] > 0:
            left[winner] -= 1
            if left[winner] == 0 and supply[winner] is _Supply.EMPTY:
                taking_part[winner] = False
        else:
            wanted[winner] += 1
            room -= 1


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
        # Claims this pass may still issue: at most 2 x (served Queues) in all.
        self._budget = 2 * count
        self._outstanding: set[int] = set()
        self._stopped = free <= 0
        self._issued = 0
        self._steps: list[Step] | None = None
        self._served = 0

    def _index(self, request: ClaimRequest) -> int:
        return self._dispatcher.queues.index(request.queues[0])

    def next_claims(self) -> list[ClaimRequest]:
        if self._stopped or self._outstanding or self._budget <= 0:
            return []
        held = [len(items) for items in self._held]
        room = self._free - sum(held)
        if room <= 0:
            return []
        _, wanted = _simulate(
            self._dispatcher.weights, self._dispatcher.credits, held, self._supply, room
        )
        requests: list[ClaimRequest] = []
        for index, count in enumerate(wanted):
            if count > 0 and len(requests) < self._budget:
                requests.append(ClaimRequest((self._dispatcher.queues[index],), count))
                self._outstanding.add(index)
        self._budget -= len(requests)
        return requests

    def claimed(self, request: ClaimRequest, items: Sequence[T]) -> None:
        _check_count(request, items)
        self._issued += 1
        index = self._index(request)
        self._outstanding.discard(index)
        self._held[index].extend(items)
        if len(items) < request.limit:
            self._supply[index] = _Supply.EMPTY

    def claim_failed(self, request: ClaimRequest) -> None:
        self._issued += 1
        index = self._index(request)
        self._outstanding.discard(index)
        self._supply[index] = _Supply.BLOCKED
        self.cut_short()

    def cut_short(self) -> None:
        self._stopped = True

    def _final_steps(self) -> list[Step]:
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
