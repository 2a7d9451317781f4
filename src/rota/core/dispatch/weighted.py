"""Weighted: a pass's rounds of claims, reflow, the sweep, and charging on issue.

A pass into `free` slots:

1. simulates its free slots on a scratch copy of the credits (`Credits.simulate`) and
   claims each Queue's share, one claim per Queue with a positive allocation, all in one
   round trip. When the group's last pass left exactly one Queue open (it gave all it
   was asked; every other Queue taking part was found empty), that Queue is the *taker*
   of a round that asks every Queue still open: asked last, for all the room, it gets its
   share and whatever the others leave. That is what the reflow would give it when it is
   again the only Queue left open, so the common tenant pass (one backlogged Queue
   beside Queues with a job or two) costs one round trip, not two (docs/decisions/0060);
2. a Queue whose claim returned fewer jobs than asked, or than the room its round had
   left when the store reached it (or that the claim's probe says it drained), is *found
   empty*: once its claimed jobs are used up it takes no part in further steps. The
   pass re-simulates the slots still free with that knowledge and claims them from the
   Queues still open (reflow), round after round until the pass is full or no Queue is
   left to ask. A pass issues at most 2 x (served Queues) claims,
   and every reflow round keeps one of them in reserve: it asks each Queue its share
   when a claim remains after it; otherwise it is one *sweep*, a claim over every Queue
   still open (largest share first) for all the room, which fills the pass or finds them
   all empty;
3. the final simulation, over exactly the jobs claimed, gives the slot order and one step
   per job. The credits move only when `serve()` charges a step, one per job dispatched:
   a claim that failed or was never issued charges nothing.

A round that does not fill the pass finds at least one more Queue empty, and every claim
uses up the budget as it is issued, so a pass always ends.

Pure: no I/O, no clock, no asyncio, no randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from rota.core.dispatch.memory import EmptyQueueMemory
from rota.core.dispatch.plan import ClaimRequest, Dispatcher, PassPlan, RoundTrip, check_count
from rota.core.dispatch.swrr import Credits, Simulated
from rota.core.policy import Weighted

T = TypeVar("T")


class WeightedDispatcher(Dispatcher):
    """A Weighted group's dispatch state for its life: the credits, and (`remember_empty`)
    what it remembers of Queues found empty (rota.core.dispatch.memory). Without it,
    every pass starts with every Queue taking part."""

    def __init__(self, policy: Weighted, *, remember_empty: bool = False) -> None:
        self.policy = policy
        self.queues = policy.queues
        self.weights = tuple(weight for _, weight in policy.weights)
        self.index = {queue: index for index, queue in enumerate(self.queues)}
        self.state = Credits(self.weights)
        self.memory = EmptyQueueMemory(len(self.queues)) if remember_empty else None
        # The one Queue the last pass left open, if it left one: the next rounds' taker.
        self.taker: int | None = None
        self._current: WeightedPass[Any] | None = None

    @property
    def credits(self) -> list[int]:
        """Every Queue's credit, in declaration order (a new list: read-only)."""
        return self.state.values()

    @property
    def probe_pending(self) -> bool:
        """Whether the next pass probes the Queues held for empty (see the memory)."""
        return self.memory is not None and self.memory.probe_pending

    def note_work(self, queue: str) -> None:
        """A wake-up hint: jobs were enqueued into `queue` (any thread). It takes part in
        the pass after the next `take_hints`, even if the pass running now finds it
        drained: that pass's claim may have read the Queue before the enqueue committed."""
        index = self.index.get(queue)
        if self.memory is not None and index is not None:
            self.memory.hint(index)

    def take_hints(self) -> None:
        """The Queues hinted since the last call take part again (the last pass is finished
        first: a Queue it found drained is held for empty, then rejoins)."""
        self.finish_pass()
        if self.memory is not None:
            for index in self.memory.take_hinted():
                self.state.join(index)

    def finish_pass(self) -> None:
        """End the last pass's plan (every job of it served or skipped), as the next
        pass's beginning would: the credits then stand as that next pass starts."""
        if self._current is not None:
            self._current.finish()
            self._current = None

    def begin_pass(
        self, free: int, *, recheck: bool = False, queue_of: Callable[[T], str] | None = None
    ) -> PassPlan[T]:
        self.finish_pass()
        probe = (None if self.memory is None
                 else self.memory.to_probe(free, recheck, self.state.out))
        plan: WeightedPass[T] = WeightedPass(self, free, probe, queue_of)
        self._current = plan
        return plan


class WeightedPass(PassPlan[T]):
    def __init__(
        self, dispatcher: WeightedDispatcher, free: int, probe: list[int] | None,
        queue_of: Callable[[T], str] | None,
    ) -> None:
        self._dispatcher = dispatcher
        self._credits = dispatcher.state
        self.queue_of = queue_of
        self.probes_claims = dispatcher.memory is not None
        self._free = free
        self._held: dict[int, list[T]] = {}  # only the Queues this pass claimed from
        self._held_total = 0
        self._empty: set[int] = set()  # found empty, holding jobs: leave once they are used
        self._found: dict[int, bool] = {}  # found empty in this pass -> remembered after it
        self._budget = 2 * len(dispatcher.queues)  # claims this pass may still issue
        self._issued = 0
        self._outstanding = 0  # requests of the last round not answered yet
        self._reflow = False  # a round was asked: the next one is a reflow round
        # The room of the last round asked, and what of it its answered claims left.
        self._round_room = 0
        self._round_left = 0
        self._probe = (None if not probe else
                       ClaimRequest(tuple(dispatcher.queues[i] for i in probe), 0, probe=True))
        self._probed = False
        self._stopped = free <= 0
        self._planned: Simulated | None = None  # the last round, while it stands as final
        self._final: Simulated | None = None
        self._served = 0
        self._next_leave = 0
        self._finished = False

    # -- claiming ---------------------------------------------------------------------------

    def next_claims(self) -> list[ClaimRequest]:
        if self._stopped or self._outstanding:
            return []
        if self._probe is not None:
            request, self._probe = self._probe, None
            self._outstanding = 1
            return [request]
        room = self._free - self._held_total
        if room <= 0 or self._budget <= 0:
            return []
        simulated = self._credits.simulate(
            {index: len(items) for index, items in self._held.items()}, self._empty, room)
        shares = sorted(simulated.wanted.items())
        if not shares:
            return []
        queues = self._dispatcher.queues
        if self._reflow and self._budget - len(shares) < 1:
            requests = [self._sweep(shares, room)]
            self._planned = None  # a sweep's slots are not the simulation's
        else:
            # A taker only when every Queue still open is asked: one that is not would get
            # its turn at the slots the others leave in a reflow round.
            taker = self._dispatcher.taker if len(shares) == self._open() else None
            requests = [ClaimRequest((queues[index],), count)
                        for index, count in shares if index != taker]
            if taker is not None and len(requests) < len(shares):  # it has a share: last
                requests.append(ClaimRequest((queues[taker],), room))
            self._planned = simulated
        self._round_room = self._round_left = room
        self._reflow = True
        self._budget -= len(requests)
        self._outstanding = len(requests)
        return requests

    def round_trip(self, requests: Sequence[ClaimRequest]) -> RoundTrip:
        """As `PassPlan.round_trip`, for at most the round's room in all (its taker is
        asked for all of it)."""
        trip = super().round_trip(requests)
        if trip.limits is None:
            return trip
        return replace(trip, limit=self._round_room)

    def _sweep(self, shares: list[tuple[int, int]], room: int) -> ClaimRequest:
        """One claim for all the room over every Queue still open: those with a share,
        largest first (ties to the lower index), then the others in declaration order."""
        if self.queue_of is None:
            raise ValueError(
                "this pass needs a sweep claim over several Queues; begin it with "
                "begin_pass(free, queue_of=...) so that it can tell their jobs apart")
        order = [index for index, _ in sorted(shares, key=lambda share: (-share[1], share[0]))]
        named = set(order)
        order += [index for index in range(len(self._dispatcher.queues))
                  if index not in named and index not in self._credits.out
                  and index not in self._empty]
        return ClaimRequest(tuple(self._dispatcher.queues[index] for index in order), room)

    def claimed(
        self, request: ClaimRequest, items: Sequence[T], *,
        controlled: Collection[str] = (), drained: Collection[str] = (),
    ) -> None:
        if request.probe:
            raise ValueError("claimed() answers a claim; use probed() for a probe request")
        # The store answers a round's claims in turn, within the round's room: the taker's
        # ask is what the claims before it left.
        asked = min(request.limit, self._round_left)
        check_count(asked, items)
        self._round_left -= len(items)
        self._answered()
        index = self._dispatcher.index
        if len(request.queues) == 1:
            name = request.queues[0]
            self._took(index[name], items, len(items) < asked, name in drained,
                       name in controlled)
            return
        # A sweep: the store took each Queue's jobs in turn, so a Queue that gave fewer
        # than the room left when it was reached is empty; one not reached is still open.
        assert self.queue_of is not None  # (`_sweep` checked)
        by_queue: dict[str, list[T]] = {}
        for item in items:
            by_queue.setdefault(self.queue_of(item), []).append(item)
        left = asked
        for name in request.queues:
            taken = by_queue.pop(name, [])
            short = left > 0 and len(taken) < left
            self._took(index[name], taken, short, name in drained, name in controlled)
            left -= len(taken)
        if by_queue:
            raise ValueError("a sweep claim returned jobs of a Queue it did not name; the "
                             "store broke the claim contract")

    def _took(self, index: int, items: Sequence[T], short: bool, drained: bool,
              controlled: bool) -> None:
        """Queue `index` gave `items`: fewer than asked (`short`), or all of them and no
        due job is left (`drained`); either way it is found empty for the rest of the
        pass. It is remembered after the pass unless it came back short and is paused or
        limited (`controlled`): a Queue control, not a lack of work, may be why. (Every
        store names a controlled Queue that came back short; not every one names those
        that gave all they were asked, so those are remembered whatever they are.)"""
        if items:
            self._held.setdefault(index, []).extend(items)
            self._held_total += len(items)
        if short or drained:
            self._planned = None
            self._found[index] = not (short and controlled)
            if index in self._held:
                self._empty.add(index)
            else:  # no step of this pass is charged yet: it leaves from the first one
                self._credits.leave(index)

    def claim_failed(self, request: ClaimRequest) -> None:
        self._answered()
        self._planned = None
        self._stopped = True

    def probed(self, request: ClaimRequest, due: Collection[str]) -> None:
        if not request.probe:
            raise ValueError("probed() answers a probe request; use claimed() for a claim")
        self._outstanding = 0
        self._probed = True
        due = frozenset(due)
        for name in request.queues:
            if name in due:
                self._credits.join(self._dispatcher.index[name])
            else:
                self._credits.leave(self._dispatcher.index[name])
        assert self._dispatcher.memory is not None  # (only it asks probes)
        self._dispatcher.memory.probed()

    def _answered(self) -> None:
        self._issued += 1
        self._outstanding = max(0, self._outstanding - 1)

    def cut_short(self) -> None:
        self._stopped = True

    @property
    def claims_issued(self) -> int:
        return self._issued

    # -- dispatching ------------------------------------------------------------------------

    def _final_steps(self) -> Simulated:
        if self._final is None:
            self._stopped = True
            if self._planned is not None and not self._outstanding:
                self._final = self._planned  # every claim of the last round came back full
            else:
                self._final = self._credits.simulate(
                    {index: len(items) for index, items in self._held.items()},
                    self._empty, 0)
            self._dispatcher.taker = self._left_open()
            memory = self._dispatcher.memory
            if memory is not None and self._free > 0:
                memory.pass_ended(claimed_nothing=not self._held_total, probed=self._probed,
                                  held_more=any(self._found.values()))
        return self._final

    def _open(self) -> int:
        """How many Queues take part and are not found empty in this pass."""
        out = self._credits.out
        found_in = sum(1 for index in self._found if index not in out)
        return len(self._dispatcher.queues) - len(out) - found_in

    def _left_open(self) -> int | None:
        """The one Queue this pass leaves open, if it leaves exactly one: a Queue it
        claimed from and did not find empty, while every other Queue taking part was
        found empty (a Queue never asked may have work: then there is none)."""
        if self._open() != 1:
            return None
        held_open = [index for index in self._held if index not in self._found]
        return held_open[0] if len(held_open) == 1 else None

    def dispatch_order(self) -> list[T]:
        held = {index: iter(items) for index, items in self._held.items()}
        return [next(held[winner]) for winner in self._final_steps().winners]

    def serve(self) -> None:
        winner = self._advance("serve")
        self._credits.charge(winner)

    def skip(self) -> None:
        self._advance("skip")

    def _advance(self, call: str) -> int:
        """Move on to the next dispatched job: the Queues that leave the steps before its
        step leave now. Returns that step's winner."""
        final = self._final_steps()
        if self._served >= len(final.winners):
            raise RuntimeError(f"{call}() called more often than the pass dispatched jobs")
        if self._finished:
            raise RuntimeError(f"{call}() after the group's next pass began")
        leaves = final.leaves
        while self._next_leave < len(leaves) and leaves[self._next_leave][0] <= self._served:
            self._credits.leave(leaves[self._next_leave][1])
            self._next_leave += 1
        self._served += 1
        return final.winners[self._served - 1]

    def finish(self) -> None:
        """The group's next pass begins: a Queue found empty in this pass takes part again,
        unless the group remembers it (then it stays out until a probe finds work)."""
        self._finished = True
        remember = self._dispatcher.memory is not None
        for index, remembered in self._found.items():
            if remember and remembered:
                self._credits.leave(index)
            else:
                self._credits.join(index)
