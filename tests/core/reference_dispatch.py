"""The Weighted planner in its plainest form (O(Queues) per step, credits as a plain list):
the reference the planner is checked against, claim for claim and credit for credit
(tests/core/test_dispatch_differential.py). Change it only where the dispatch rule itself
changes, in the same simple form, together with the planner.

- The memory of empty Queues: `ReferenceDispatcher.begin_pass(free, empty=...)` takes the
  Queues held for empty at the start of a pass; they start it found empty, exactly as if
  a claim had found them empty before its first round. A claim whose probe says it
  drained a Queue (`claimed(..., drained=...)`) finds that Queue empty too.
- The reflow reserve: every reflow round keeps one claim in reserve, and a round that
  cannot is one sweep over every open Queue for all the room (`queue_of` tells its jobs
  apart).
- The taker: when a pass ends with exactly one Queue not found empty, and it gave jobs,
  the group's next rounds that ask every open Queue ask it last, for all the room; the
  store answers a round's claims in turn within that room, so a claim is short when it
  gives less than it asked or than the room its round had left.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar

from rota.core.dispatch import ClaimRequest
from rota.core.policy import Weighted

T = TypeVar("T")


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


def _check_count(limit: int, items: Sequence[object]) -> None:
    if len(items) > limit:
        raise ValueError("the store broke the claim contract")


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


class ReferencePass(Generic[T]):
    def __init__(
        self, dispatcher: ReferenceDispatcher, free: int, empty: Collection[int] = (),
        queue_of: Callable[[T], str] | None = None,
    ) -> None:
        self._dispatcher = dispatcher
        self._queue_of = queue_of
        count = len(dispatcher.queues)
        self._free = free
        self._held: list[deque[T]] = [deque() for _ in range(count)]
        self._supply = [_Supply.EMPTY if i in empty else _Supply.OPEN for i in range(count)]
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
        self._round_left = 0  # what the last round's answered claims left of its room

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
        # Invariant: budget >= 1 before every reflow round, kept for a sweep: one claim
        # for all the room over every open Queue, largest share first, then the others in
        # declaration order. It fills the pass or finds them all empty.
        if self._round > 0 and budget - len(shares) < 1:
            self._planned_exact = False
            self._round += 1
            largest_first = sorted(shares, key=lambda share: (-share[1], share[0]))
            order = [index for index, _ in largest_first]
            order += [index for index, supply in enumerate(self._supply)
                      if supply is _Supply.OPEN and index not in order]
            self._outstanding.add(order[0])
            self._round_left = room
            names = tuple(self._dispatcher.queues[index] for index in order)
            return [ClaimRequest(names, room)]
        self._round += 1
        self._round_left = room
        open_count = sum(1 for supply in self._supply if supply is _Supply.OPEN)
        taker = self._dispatcher.taker if len(shares) == open_count else None
        requests: list[ClaimRequest] = []
        for index, count in shares:
            if index != taker:
                requests.append(ClaimRequest((self._dispatcher.queues[index],), count))
            self._outstanding.add(index)
        if taker is not None and wanted[taker] > 0:
            requests.append(ClaimRequest((self._dispatcher.queues[taker],), room))
        return requests

    def claimed(
        self, request: ClaimRequest, items: Sequence[T], drained: Collection[str] = ()
    ) -> None:
        """`drained`: Queues of the claim that the store says have no due job left: found
        empty, however many jobs they gave."""
        left = min(request.limit, self._round_left)
        _check_count(left, items)
        self._round_left -= len(items)
        self._issued += 1
        self._outstanding.discard(self._index(request))
        # One Queue, or a sweep: the store took each Queue's jobs in turn, so a Queue that
        # gave fewer than the room left when it was reached is found empty.
        for name in request.queues:
            if left == 0:
                break
            index = self._dispatcher.queues.index(name)
            got = [item for item in items
                   if len(request.queues) == 1 or self._queue_of_item(item) == name]
            self._held[index].extend(got)
            if len(got) < left:
                self._supply[index] = _Supply.EMPTY
                self._planned_exact = False
            left -= len(got)
        for name in request.queues:  # (also those a sweep did not reach)
            if name in drained:
                self._supply[self._dispatcher.queues.index(name)] = _Supply.EMPTY
                self._planned_exact = False

    def _queue_of_item(self, item: T) -> str:
        if self._queue_of is None:
            raise ValueError("a sweep needs begin_pass(free, queue_of=...)")
        return self._queue_of(item)

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
        if self._steps is None:
            candidates = [index for index, supply in enumerate(self._supply)
                          if supply is not _Supply.EMPTY]
            self._dispatcher.taker = (
                candidates[0] if len(candidates) == 1 and self._held[candidates[0]] else None)
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


class ReferenceDispatcher:
    """The old WeightedDispatcher: credits as a plain list, one per Queue."""

    def __init__(self, policy: Weighted) -> None:
        self.queues = policy.queues
        self.weights = tuple(weight for _, weight in policy.weights)
        self.credits = [0] * len(self.queues)
        self.taker: int | None = None  # the one Queue the last pass left open

    def begin_pass(
        self, free: int, empty: Collection[int] = (), queue_of: Callable[[T], str] | None = None
    ) -> ReferencePass[T]:
        return ReferencePass(self, free, empty, queue_of)
