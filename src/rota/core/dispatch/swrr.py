"""Smooth weighted round-robin: one Weighted group's credits, and the one loop that
simulates its steps.

One *step* over the Queues taking part: each one's credit += its weight; the highest
credit among the Queues that can be served wins (ties to the lower declaration index);
the winner's credit -= the sum of the weights that took part (the nginx update).

Representation: a Queue *in* the steps has credit `weight * g + offset`, where `g` counts
the steps charged so far, so a step changes `g` and the winner's offset only. A Queue
*out* of the steps (found empty) keeps its credit as a plain number: it stands still
while the Queue is out, which is what bounds an idle Queue's catch-up. Within one weight
the order of credits is the order of offsets whatever `g` is, so the Queues that are in
sit in one heap per distinct weight, and a step's winner is the best of one heap top per
weight: a step costs O(distinct weights + log Queues), nothing per Queue.

Pure: no I/O, no clock, no asyncio, no randomness.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Simulated:
    """A simulation's outcome: the winner of each step in slot order; the Queues that left
    the steps on the way (`leaves`: (position, Queue): it takes no part from that step
    on); per Queue, the slots it won beyond its held jobs (to be claimed)."""

    winners: list[int]
    leaves: list[tuple[int, int]]
    wanted: dict[int, int]


class Credits:
    """The credits of one Weighted group, one per Queue in declaration order."""

    def __init__(self, weights: Sequence[int]) -> None:
        self.weights = tuple(weights)
        self.out: set[int] = set()  # Queues out of the steps
        self.total = sum(self.weights)  # the weights of the Queues in
        self._g = 0
        self._value = [0] * len(self.weights)  # in: the offset; out: the credit itself
        self._heaps: dict[int, list[tuple[int, int]]] = {}  # weight -> (-offset, Queue)
        self._entries = 0
        # Queues whose offset moved (charged, or joined) since their entry was pushed: one
        # entry each is pushed before the heaps are next read, however many steps it won.
        self._moved: set[int] = set()
        self._rebuild()

    @classmethod
    def resumed(cls, weights: Sequence[int], credits: Sequence[int],
                out: Collection[int]) -> Credits:
        """Credits that start from `credits` (one per Queue) rather than zero, the Queues
        in `out` out of the steps: a group whose policy changed while it runs."""
        if len(credits) != len(weights):
            raise ValueError(f"{len(credits)} credits for {len(weights)} weights")
        state = cls(weights)
        state._value = list(credits)  # no step charged yet: an offset is the credit itself
        state.out = set(out)
        state.total = sum(weight for index, weight in enumerate(state.weights)
                          if index not in state.out)
        state._rebuild()
        return state

    def credit(self, index: int) -> int:
        if index in self.out:
            return self._value[index]
        return self.weights[index] * self._g + self._value[index]

    def values(self) -> list[int]:
        """Every Queue's credit, in declaration order (a new list)."""
        return [self.credit(index) for index in range(len(self.weights))]

    def leave(self, index: int) -> None:
        """Take Queue `index` out of the steps; its credit stands still from now on."""
        if index not in self.out:
            self._value[index] = self.credit(index)
            self.out.add(index)
            self.total -= self.weights[index]

    def join(self, index: int) -> None:
        """Let Queue `index` take part again, with the credit it left with."""
        if index in self.out:
            self.out.discard(index)
            self._value[index] -= self.weights[index] * self._g
            self.total += self.weights[index]
            self._moved.add(index)

    def charge(self, winner: int) -> None:
        """Charge one step over the Queues that are in, won by `winner`."""
        self._g += 1
        self._value[winner] -= self.total
        self._moved.add(winner)

    def _heaps_now(self) -> dict[int, list[tuple[int, int]]]:
        """The heaps, with an entry at its offset now for every Queue that is in."""
        if self._entries + len(self._moved) > 4 * len(self.weights) + 64:
            self._rebuild()  # drop the stale entries
        for index in self._moved - self.out:
            heapq.heappush(self._heaps.setdefault(self.weights[index], []),
                           (-self._value[index], index))
            self._entries += 1
        self._moved.clear()
        return self._heaps

    def _rebuild(self) -> None:
        heaps: dict[int, list[tuple[int, int]]] = {}
        for index, weight in enumerate(self.weights):
            if index not in self.out:
                heaps.setdefault(weight, []).append((-self._value[index], index))
        for heap in heaps.values():
            heapq.heapify(heap)
        self._heaps = heaps
        self._entries = len(self.weights) - len(self.out)
        self._moved.clear()

    def heap_entries(self) -> int:
        return sum(len(heap) for heap in self._heaps_now().values())

    def simulate(self, held: Mapping[int, int], empty: Collection[int], room: int) -> Simulated:
        """Simulate steps from the real credits, without changing them, until no Queue can
        be served.

        `held[i]` jobs of Queue i are claimed and must all get a slot. A Queue in `empty`
        (found empty in this pass) leaves the steps once its held jobs are used up. Any
        other Queue that is in may win up to `room` more slots in all (to be claimed);
        with no room left it still takes part, but cannot be served.
        """
        weights = self.weights
        left = {index: count for index, count in held.items() if count > 0}
        # The Queues this simulation steps on or that hold jobs, with their scratch
        # offsets; every other Queue is read from the heaps, whose tops skip these.
        stepped = _Stepped(weights, {index: self._value[index] for index in left})
        tops = _Tops(self, stepped.offset) if room > 0 else None
        g, total = self._g, self.total
        winners: list[int] = []
        leaves: list[tuple[int, int]] = []
        wanted: dict[int, int] = {}
        # Every step serves a held job or takes a slot of room: this bounds the loop.
        for step in range(sum(left.values()) + room):
            best, value = stepped.best(g + 1, left, empty, room > 0)
            if room > 0 and tops is not None:
                for weight, (offset, index) in tops.best.items():
                    candidate = weight * (g + 1) + offset
                    if best < 0 or candidate > value or (candidate == value and index < best):
                        best, value = index, candidate
            if best < 0:
                break
            g += 1
            if best not in stepped.offset:  # (so it came from `tops`)
                stepped.offset[best] = self._value[best]
                assert tops is not None
                tops.took(best)
            winners.append(best)
            if left.get(best, 0) > 0:
                left[best] -= 1
                if left[best] == 0 and best in empty:  # its last held job: it leaves
                    del stepped.offset[best]
                    total -= weights[best]
                    leaves.append((step + 1, best))
                    continue
            else:
                wanted[best] = wanted.get(best, 0) + 1
                room -= 1
            stepped.step(best, total)
        if tops is not None:
            tops.restore()
        return Simulated(winners, leaves, wanted)


class _Stepped:
    """For one simulation: the Queues it steps on or that hold jobs, with their scratch
    offsets, in one heap per weight (entries stale once their Queue's offset moved on).
    A Queue that cannot be served now never can again in that simulation (held jobs and
    room only shrink), so its entries are dropped as they surface."""

    def __init__(self, weights: Sequence[int], offset: dict[int, int]) -> None:
        self._weights = weights
        self.offset = offset
        self._heaps: dict[int, list[tuple[int, int]]] = {}
        for index in offset:
            self._push(index)

    def _push(self, index: int) -> None:
        heapq.heappush(self._heaps.setdefault(self._weights[index], []),
                       (-self.offset[index], index))

    def step(self, index: int, total: int) -> None:
        """Queue `index` won a step over Queues whose weights sum to `total`."""
        self.offset[index] -= total
        self._push(index)

    def best(self, gain: int, left: Mapping[int, int], empty: Collection[int],
             room: bool) -> tuple[int, int]:
        """The Queue with the highest credit after a step's gain (`gain` steps charged)
        among those that can be served, and that credit; (-1, 0) for none."""
        best, value = -1, 0
        for weight, heap in self._heaps.items():
            while heap:
                negative, index = heap[0]
                if self.offset.get(index) != -negative or not (
                        left.get(index, 0) > 0 or (room and index not in empty)):
                    heapq.heappop(heap)
                    continue
                candidate = weight * gain - negative
                if best < 0 or candidate > value or (candidate == value and index < best):
                    best, value = index, candidate
                break
        return best, value


class _Tops:
    """For one simulation: the best entry of each weight's heap among the Queues that are
    in and not in `skip` (the simulation's scratch). The entries of skipped Queues are set
    aside while it runs and put back by `restore`; stale ones are dropped for good."""

    def __init__(self, credits: Credits, skip: Mapping[int, int]) -> None:
        self._credits = credits
        self._skip = skip
        self._aside: list[tuple[int, int]] = []
        self.best: dict[int, tuple[int, int]] = {}  # weight -> (offset, Queue)
        for weight in credits._heaps_now():
            self._advance(weight)

    def took(self, index: int) -> None:
        """Queue `index` joined the scratch: its weight's best entry is the next one."""
        self._advance(self._credits.weights[index])

    def _advance(self, weight: int) -> None:
        credits = self._credits
        heap = credits._heaps[weight]
        while heap:
            negative, index = heap[0]
            if index in credits.out or credits._value[index] != -negative:
                heapq.heappop(heap)  # stale: the Queue was charged or left since
                credits._entries -= 1
            elif index in self._skip:
                self._aside.append(heapq.heappop(heap))
            else:
                self.best[weight] = (-negative, index)
                return
        self.best.pop(weight, None)

    def restore(self) -> None:
        heaps, weights = self._credits._heaps, self._credits.weights
        for entry in self._aside:
            heapq.heappush(heaps[weights[entry[1]]], entry)
        self._aside = []
