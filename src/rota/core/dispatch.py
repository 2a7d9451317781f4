"""Dispatch planning: which Queues a pass claims from, how many jobs each, in what order.

Theory of operation
-------------------
A Worker Group owns one `Dispatcher` for its life. Each pass asks it for a `PassPlan`
sized to the group's free capacity, then drives the plan sans-I/O:

    plan = dispatcher.begin_pass(free, queue_of=lambda job: job.queue)
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
   2 x (served Queues) claims, and every reflow round keeps one of them in reserve: it
   asks each Queue its share when a claim remains after it; otherwise the round is one
   *sweep*, a claim over every Queue still open (largest share first) for all the room,
   like Strict's claim, which fills the pass or finds them all empty. So the pass always
   fills from due work wherever it exists, within the claim bound, and while the Queues
   still open have work every slot goes where the simulation put it (docs/dispatch.md,
   "The reflow reserve": why one sweep, not one claim per open Queue);
3. the final simulation, over exactly the jobs claimed, gives the slot order and one `Step`
   per job. The persistent credits move only when `serve()` charges a step, one per job
   actually dispatched. A Queue whose claim failed or was never issued is not found empty:
   it keeps taking part (and gaining credit) but is charged nothing.

With every Queue backlogged no Queue is ever found empty, every step has all Queues taking
part, and the served sequence is exactly the nginx sequence, whatever the pool size.

Pure: no I/O, no clock, no asyncio, no randomness.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar

from rota.core.policy import DispatchPolicy, Strict, Weighted

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    """One claim a pass wants issued: up to `limit` due jobs from `queues`, in that order.

    A Weighted pass asks one Queue per claim, except its *sweep* (several Queues, its last
    claim of the pass, see the module docstring): answer it like Strict's claim, with the
    jobs in the order the store took them; the pass tells their Queues apart with the
    `queue_of` it was begun with.

    A *probe* (`probe=True`, limit 0) asks no jobs: it asks which of `queues` have due work
    (`Store.claim(..., probe=queues)`), answered with `PassPlan.probed`. Only a dispatcher
    that remembers empty Queues issues probes."""

    queues: tuple[str, ...]
    limit: int
    probe: bool = False


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


@dataclass(slots=True)
class _Simulated:
    """The outcome of one simulation: the winner of each step in slot order, the Queues that
    stop taking part (`leaves`: (step position, Queue), in position order: the Queue takes
    no part from that step on), and per Queue the slots still to claim.

    For the next simulation of the pass to start from this one (`_unchanged_steps`): per
    step, the winner's credit plus its weight (`values`) and the sum of the weights taking
    part (`totals`), and the first step won by a Queue that already won (`rewin`)."""

    winners: list[int]
    leaves: list[tuple[int, int]]
    wanted: dict[int, int]
    values: list[int] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)
    rewin: int = 0


class PassPlan(Generic[T]):
    """One pass of one Worker Group, driven by the caller (see the module docstring)."""

    def next_claims(self) -> list[ClaimRequest]:
        """The claims to issue now; an empty list when the pass has claimed all it will."""
        raise NotImplementedError  # pragma: no cover

    def claimed(
        self, request: ClaimRequest, items: Sequence[T], *, controlled: bool = False
    ) -> None:
        """Record what a claim returned, in the order the store returned it.

        `controlled`: the Queue is paused or has a concurrency limit (`Claimed.controlled`),
        so a short claim is found empty for this pass only, never remembered."""
        raise NotImplementedError  # pragma: no cover

    def claim_failed(self, request: ClaimRequest) -> None:
        """Record that a claim raised: the pass is cut short, and the claim charges nothing."""
        raise NotImplementedError  # pragma: no cover

    def probed(self, request: ClaimRequest, due: Collection[str]) -> None:
        """Record a probe's answer: `due` names the probed Queues that have due work."""
        raise ValueError("this pass issues no probe")

    def cut_short(self) -> None:
        """Issue no further claims (shutdown); what was claimed is still dispatched."""
        raise NotImplementedError  # pragma: no cover

    def answer_known_empty(self, queues: Collection[str], answered: list[str]) -> None:
        """From now on, answer in the plan, as found empty, every claim it would ask of a
        Queue in `queues` (a collection the caller keeps up to date: the Queues it knows
        have no due work, from a probe): exactly what `claimed(request, [])` would record,
        but `next_claims` never returns those claims. The names answered are appended to
        `answered`. Strict plans ignore it (one claim over every Queue)."""

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

    def claimed(
        self, request: ClaimRequest, items: Sequence[T], *, controlled: bool = False
    ) -> None:
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


_PROBE = -1  # the outstanding "request" of a probe, in `_WeightedPass._outstanding`


class _WeightedPass(PassPlan[T]):
    def __init__(
        self, dispatcher: WeightedDispatcher, free: int, recheck: bool,
        queue_of: Callable[[T], str] | None,
    ) -> None:
        self._dispatcher = dispatcher
        self._free = free
        self._queue_of = queue_of
        # Only the Queues this pass touched have entries: the pass costs nothing per Queue.
        self._held: dict[int, list[T]] = {}
        self._held_total = 0
        self._supply: dict[int, _Supply] = {}  # absent: OPEN (or out, see the dispatcher)
        self._open = len(dispatcher.queues) - len(dispatcher._out)
        self._round = 0
        self._outstanding: set[int] = set()
        self._stopped = free <= 0
        self._issued = 0
        self._probe = recheck and not self._stopped and bool(dispatcher._out)
        self._final: _Simulated | None = None
        # The last round's simulation, and whether every claim of that round came back
        # full: then it is already the final slot order (no need to simulate again).
        self._planned: _Simulated | None = None
        self._planned_exact = False
        # The last simulation of the pass, and the Queues found empty since: the next
        # simulation starts from its steps that still stand (`_simulate`). Not resumable
        # when a claim since then was not the plain answer to one of its shares.
        self._last: _Simulated | None = None
        self._short: list[int] = []
        self._resumable = False
        self._served = 0
        self._next_leave = 0
        self._left: list[int] = []  # Queues this pass moved out of the steps
        self._found_empty: list[int] = []  # Queues a claim of this pass found empty
        self._controlled: set[int] = set()  # ... of which paused or limited ones
        self._finished = False
        self._known: Collection[str] = ()  # answer_known_empty
        self._answered: list[str] = []
        # Open Queues (taking part, not marked) that are not in `_known`: counted at the
        # first round found entirely in `_known`, then kept by `_mark` and `claimed`.
        self._unknown_open: int | None = None

    def _index(self, request: ClaimRequest) -> int:
        return self._dispatcher.index[request.queues[0]]

    def answer_known_empty(self, queues: Collection[str], answered: list[str]) -> None:
        self._known = queues
        self._answered = answered

    def next_claims(self) -> list[ClaimRequest]:
        while True:
            requests = self._next_round()
            if requests is not None:
                return requests
            # A round of Queues all known empty. When every Queue still open is known
            # empty, the rounds that follow would find them empty a round at a time (a
            # simulation each: thousands at the end of a drain over 10,000 Queues), each
            # round all known, until none is open: find them all empty now instead. The
            # outcome is the same: a Queue found empty with nothing held leaves at the
            # pass's first step whenever it is found, one with held jobs is EMPTY, and the
            # reflow budget (checked: one claim per Queue still open) does not run out
            # before the last one.
            if (self._count_unknown_open() == 0
                    and 2 * len(self._dispatcher.queues) - self._issued >= self._open):
                self._find_known_empty()

    def _count_unknown_open(self) -> int:
        if self._unknown_open is None:
            dispatcher = self._dispatcher
            index, out, supply = dispatcher.index, dispatcher._out, self._supply
            known_open = 0
            for name in self._known:
                position = index.get(name)
                if position is not None and position not in out and position not in supply:
                    known_open += 1
            self._unknown_open = self._open - known_open
        return self._unknown_open

    def _find_known_empty(self) -> None:
        dispatcher = self._dispatcher
        index, out, supply = dispatcher.index, dispatcher._out, self._supply
        # Each as `claimed(ClaimRequest((name,), 1), [])` records it: found empty.
        self._answer_all_empty([
            position for position in map(index.get, self._known)
            if position is not None and position not in out and position not in supply])

    def _next_round(self) -> list[ClaimRequest] | None:
        """The claims of the next round; None when the plan answered every claim of the
        round itself (Queues known empty, `answer_known_empty`): plan the next round."""
        dispatcher = self._dispatcher
        if self._probe and not self._stopped:
            self._probe = False
            self._outstanding.add(_PROBE)
            names = tuple(dispatcher.queues[i] for i in sorted(dispatcher._out))
            return [ClaimRequest(names, 0, probe=True)]
        if self._stopped or self._outstanding:
            return []
        room = self._free - self._held_total
        if room <= 0:
            return []
        simulated = self._simulate(room)
        shares = sorted(simulated.wanted.items())
        budget = 2 * len(dispatcher.queues) - self._issued
        if not shares or budget <= 0:
            self._resumable = not shares  # shares never asked: their slots do not stand
            return []
        self._planned = simulated
        self._planned_exact = True
        # Invariant: budget >= 1 before every reflow round, kept for a sweep. A reflow
        # round asks each Queue its share if a claim remains after it; otherwise it is
        # the sweep, which fills the pass or finds every Queue it names empty.
        if self._round > 0 and budget - len(shares) < 1:
            self._planned_exact = False
            self._resumable = False
            self._round += 1
            sweep = self._sweep(shares, room)
            if len(sweep.queues) == 1 and sweep.queues[0] in self._known:
                # A sweep over one Queue (the only one open) is a plain claim: known
                # empty, it is answered here like any other (below), not asked of the
                # store. (One over several goes as it is: answering it here would find
                # every Queue it names empty.)
                index = dispatcher.index[sweep.queues[0]]
                self._outstanding.discard(index)
                self._answer_empty(index)
                return None
            return [sweep]
        self._round += 1
        requests: list[ClaimRequest] = []
        queues, known, outstanding = dispatcher.queues, self._known, self._outstanding
        answered: list[int] = []
        for index, count in shares:
            name = queues[index]
            if name in known:
                answered.append(index)
            else:
                requests.append(ClaimRequest((name,), count))
                outstanding.add(index)
        # A claim of a Queue known empty is answered here, found empty, in share order:
        # what `claimed(request, [])` records (a sweep: above).
        if answered:
            self._answer_all_empty(answered)
        return requests if requests or not answered else None

    def _simulate(self, room: int) -> _Simulated:
        """The dispatcher's simulation of the pass as it stands, from the steps of the
        last one that still stand (`WeightedDispatcher._unchanged_steps`)."""
        dispatcher = self._dispatcher
        held = {index: len(items) for index, items in self._held.items() if items}
        last = self._last
        forced: Sequence[int] = ()
        if last is not None and self._resumable and not self._outstanding:
            forced = last.winners[:dispatcher._unchanged_steps(last, held, self._short)]
        chain = skim = None
        if self._known and not dispatcher._single:
            if room == 1:
                chain = self._chain
            else:
                skim = self._skim
        simulated = dispatcher._simulate(held, self._supply, room, forced, chain, skim)
        self._last = simulated
        self._short = []
        self._resumable = not dispatcher._single
        return simulated

    def _chain(self, index: int) -> bool:
        """A room-one round's simulation gives its one slot to Queue `index`, which has
        nothing held: answer that round here, as `next_claims` would, if it would (the
        Queue is known empty, the round is not a sweep and has budget, and answering it
        does not leave every open Queue known empty, where `next_claims` finds them all
        empty at once). Then the simulation carries on as the next round's, instead of
        `next_claims` simulating that round again (`WeightedDispatcher._simulate`)."""
        name = self._dispatcher.queues[index]
        if name not in self._known:
            return False
        budget = 2 * len(self._dispatcher.queues) - self._issued
        if budget <= 0 or (self._round > 0 and budget < 2):
            return False  # no round, or a sweep: to the store
        if self._count_unknown_open() == 0 and budget >= self._open:
            return False  # next_claims finds every known Queue empty after this round
        self._round += 1
        self._answer_empty(index)
        return True

    def _skim(self, simulated: _Simulated) -> bool:
        """A round's simulation with nothing held (`WeightedDispatcher._simulate_plain`):
        when every Queue it gives slots to is known empty, take the round here as
        `_next_round` and `next_claims` would (every claim answered, found empty: they
        leave the steps; then, if every Queue still open is known empty, find them all
        empty) and return True: the dispatcher then simulates the next round at once,
        with what it has of this one (the next one has nothing held either, and nothing
        of this one stands: `_unchanged_steps` keeps no step). False: the round goes to
        `_next_round` as usual (a Queue to ask the store, a sweep, no budget)."""
        wanted = simulated.wanted
        budget = 2 * len(self._dispatcher.queues) - self._issued
        if not wanted or budget <= 0 or (self._round > 0 and budget - len(wanted) < 1):
            return False
        known, queues = self._known, self._dispatcher.queues
        for index in wanted:
            if queues[index] not in known:
                return False
        self._last = simulated  # (`_simulate`, then `_next_round`)
        self._short = []
        self._resumable = True
        self._planned = simulated
        self._planned_exact = True
        self._round += 1
        self._answer_all_empty(sorted(wanted))
        if (self._count_unknown_open() == 0
                and 2 * len(self._dispatcher.queues) - self._issued >= self._open):
            self._find_known_empty()  # (`next_claims`)
        return True

    def _answer_empty(self, index: int) -> None:
        """Answer the plan's claim of Queue `index`, known empty, as found empty: what
        `claimed(request, [])` would record."""
        self._answer_all_empty((index,))

    def _answer_all_empty(self, indices: Iterable[int]) -> None:
        """`_answer_empty` for each of `indices` in turn: the same records in the same
        order, with fewer calls per Queue (a pass's first rounds over 10,000 tenants, and
        `_find_known_empty` at the end of a drain, answer thousands)."""
        queues = self._dispatcher.queues
        answered, held = self._answered, self._held
        if held and not held.keys().isdisjoint(indices):
            for index in indices:
                answered.append(queues[index])
                self._issued += 1
                if index in held:
                    self._took(index, (), True, False)
                else:
                    self._left_empty(index)
            return
        # Nothing held (the usual case): `_left_empty` for them all.
        indices = list(indices)
        answered.extend([queues[index] for index in indices])
        self._issued += len(indices)
        self._left_empty_all(indices)

    def _sweep(self, shares: list[tuple[int, int]], room: int) -> ClaimRequest:
        """One claim for all the room over every Queue still open: those with a share,
        largest first (ties to the lower index), then the others in declaration order.
        Alone, it is a plain one-Queue claim."""
        dispatcher = self._dispatcher
        order = [index for index, _ in sorted(shares, key=lambda share: (-share[1], share[0]))]
        if len(order) < self._open:  # (with thousands of Queues, walk them only if needed)
            named = set(order)
            supply, out = self._supply, dispatcher._out
            order += [index for index in range(len(dispatcher.queues))
                      if index not in named and index not in out and index not in supply]
        if len(order) > 1 and self._queue_of is None:
            raise ValueError(
                "this pass needs a sweep claim over several Queues; begin it with "
                "begin_pass(free, queue_of=...) so that it can tell their jobs apart")
        self._outstanding.add(order[0])
        return ClaimRequest(tuple(dispatcher.queues[index] for index in order), room)

    def probed(self, request: ClaimRequest, due: Collection[str]) -> None:
        if not request.probe:
            raise ValueError("probed() answers a probe request; use claimed() for a claim")
        self._outstanding.discard(_PROBE)
        dispatcher = self._dispatcher
        for name in request.queues:
            if name in due:
                index = dispatcher.index[name]
                if index in dispatcher._out:
                    dispatcher._join(index)
                    self._open += 1

    def _mark(self, index: int, supply: _Supply) -> None:
        if index not in self._supply:
            self._closed(index)
        self._supply[index] = supply
        self._planned_exact = False

    def _closed(self, index: int) -> None:
        """Queue `index`, open until now, is found empty or blocked in this pass."""
        self._open -= 1
        if (self._unknown_open is not None
                and self._dispatcher.queues[index] not in self._known):
            self._unknown_open -= 1

    def claimed(
        self, request: ClaimRequest, items: Sequence[T], *, controlled: bool = False
    ) -> None:
        if request.probe:
            raise ValueError("claimed() answers a claim; use probed() for a probe request")
        got, limit = len(items), request.limit
        if got > limit:
            _check_count(request, items)
        self._issued += 1
        queues = request.queues
        index = self._dispatcher.index[queues[0]]
        self._outstanding.discard(index)
        queue_of = self._queue_of
        if len(queues) == 1 or queue_of is None:  # (a sweep has a queue_of)
            if got == limit:  # in full: what `_took` records of it
                if got:
                    self._held.setdefault(index, []).extend(items)
                    self._held_total += got
            else:
                self._took(index, items, got < limit, controlled)
            return
        # A sweep: the store took each Queue's jobs in turn, so a Queue that gave fewer
        # than the room left when it was reached is empty. Not remembered beyond this
        # pass: the sweep cannot tell a paused or limited Queue from an empty one.
        self._resumable = False
        index_of = self._dispatcher.index
        by_queue: dict[int, list[T]] = {}
        for item in items:
            by_queue.setdefault(index_of[queue_of(item)], []).append(item)
        left = request.limit
        for name in request.queues:
            if left == 0:
                break  # not reached: still open
            index = index_of[name]
            taken = by_queue.pop(index, [])
            self._took(index, taken, len(taken) < left, True)
            left -= len(taken)
        if by_queue:
            raise ValueError("a sweep claim returned jobs of a Queue it did not name; the "
                             "store broke the claim contract")

    def _took(self, index: int, items: Sequence[T], short: bool, controlled: bool) -> None:
        """Queue `index` gave `items`; `short`: fewer than asked, so it is found empty."""
        if items:
            self._held.setdefault(index, []).extend(items)
            self._held_total += len(items)
        if short:
            if controlled:
                self._controlled.add(index)
            if index in self._held:
                self._found_empty.append(index)
                self._short.append(index)
                self._mark(index, _Supply.EMPTY)
            else:
                self._left_empty(index)

    def _left_empty(self, index: int) -> None:
        """Queue `index`, with nothing held, is found empty: it takes no part in any step
        of this pass, so it leaves the steps now (no step was charged yet in this pass, so
        its credit is what it would be at the first step). This keeps every later
        simulation of the pass free of it: with 10,000 Queues the first pass finds
        thousands empty."""
        self._left_empty_all((index,))

    def _left_empty_all(self, indices: Sequence[int]) -> None:
        """`_left_empty` for each of `indices` (none with held jobs), in turn."""
        if not indices:
            return
        self._found_empty.extend(indices)
        self._short.extend(indices)
        supply = self._supply
        closed = []  # open until now (`_closed`)
        for index in indices:
            if index in supply:
                del supply[index]
            else:
                closed.append(index)
        self._open -= len(closed)
        if self._unknown_open is not None:
            known, queues = self._known, self._dispatcher.queues
            self._unknown_open -= sum(1 for index in closed if queues[index] not in known)
        self._planned_exact = False
        self._dispatcher._leave_all(indices)
        self._left.extend(indices)

    def claim_failed(self, request: ClaimRequest) -> None:
        if request.probe:
            self._outstanding.discard(_PROBE)
        else:
            self._issued += 1
            index = self._index(request)
            self._outstanding.discard(index)
            self._mark(index, _Supply.BLOCKED)
            self._resumable = False
        self.cut_short()

    def cut_short(self) -> None:
        self._stopped = True

    def _final_steps(self) -> _Simulated:
        if self._final is None and self._planned_exact and not self._outstanding:
            self._stopped = True
            self._final = self._planned  # every claim came back full: the plan stands
        if self._final is None:
            self._stopped = True
            # With no room, a Queue that was never asked (or was claimed in full) takes
            # part but cannot be served: as BLOCKED, exactly.
            self._final = self._simulate(0)
        return self._final

    def dispatch_order(self) -> list[T]:
        held = {index: iter(items) for index, items in self._held.items()}
        return [next(held[winner]) for winner in self._final_steps().winners]

    def serve(self) -> None:
        final = self._final or self._final_steps()
        if self._served >= len(final.winners):
            raise RuntimeError("serve() called more often than the pass dispatched jobs")
        if self._finished:
            raise RuntimeError("serve() after the group's next pass began")
        dispatcher = self._dispatcher
        leaves = final.leaves
        while self._next_leave < len(leaves) and leaves[self._next_leave][0] <= self._served:
            index = leaves[self._next_leave][1]
            self._next_leave += 1
            if index not in dispatcher._out:
                dispatcher._leave(index)
                self._left.append(index)
        dispatcher._charge(final.winners[self._served])
        self._served += 1

    def skip(self) -> None:
        if self._served >= len(self._final_steps().winners):
            raise RuntimeError("skip() called more often than the pass dispatched jobs")
        self._served += 1

    def _finish(self) -> None:
        """The group's next pass begins: a Queue found empty in this pass takes part again
        (or, remembering empty Queues, every one found empty stays out until a probe)."""
        self._finished = True
        dispatcher = self._dispatcher
        if dispatcher.remember_empty:
            for index in self._found_empty:
                if index in self._controlled:
                    # Paused or limited: found empty for this pass only (DESIGN.md, Queue
                    # controls); the next pass asks it again, as it always did.
                    if index in dispatcher._out:
                        dispatcher._join(index)
                elif index not in dispatcher._out:
                    dispatcher._leave(index)
        else:
            for index in self._left:
                dispatcher._join(index)

    @property
    def claims_issued(self) -> int:
        return self._issued


class Dispatcher:
    """A Worker Group's dispatch state, kept for the group's life."""

    def __init__(self, policy: DispatchPolicy) -> None:
        self.policy = policy

    def begin_pass(
        self, free: int, *, recheck: bool = False, queue_of: Callable[[T], str] | None = None
    ) -> PassPlan[T]:
        """Plan one pass into `free` free Worker slots (0 means no claim at all).

        `recheck`: a dispatcher that remembers empty Queues first probes them (one probe
        request) and lets those with due work take part again. Ignored otherwise.
        `queue_of`: the Queue of a claimed item. A Weighted pass needs it to answer a
        sweep (a claim over several Queues); without it such a pass raises `ValueError`."""
        raise NotImplementedError  # pragma: no cover

    @staticmethod
    def for_policy(policy: DispatchPolicy, *, remember_empty: bool = False) -> Dispatcher:
        """The dispatcher for `policy`, after validating it (`remember_empty`: see
        `WeightedDispatcher`; Strict keeps no state, so it ignores it).

        Raises:
            ValueError: if the policy's values are invalid (see `DispatchPolicy.validate`).
        """
        policy.validate()
        if isinstance(policy, Strict):
            return StrictDispatcher(policy)
        if isinstance(policy, Weighted):
            return WeightedDispatcher(policy, remember_empty=remember_empty)
        raise TypeError(f"unknown dispatch policy {policy!r}")  # pragma: no cover


class StrictDispatcher(Dispatcher):
    def __init__(self, policy: Strict) -> None:
        super().__init__(policy)
        self.queues = policy.queues

    def begin_pass(
        self, free: int, *, recheck: bool = False, queue_of: Callable[[T], str] | None = None
    ) -> PassPlan[T]:
        return _StrictPass(self.queues, free)


class WeightedDispatcher(Dispatcher):
    """Holds the smooth weighted round-robin credits, one per Queue, in declaration order.

    Representation (see the module docstring): a Queue taking part in the steps ("in")
    has credit `weight * g + e` where `g` counts the steps charged so far and `e` is its
    offset, so a step changes `g` and the winner's offset only; a Queue out of the steps
    (found empty) keeps its credit as a plain number. The Queues that are in sit in one
    heap per distinct weight, ordered by offset (entries `-e * span + index`, see
    `_buckets`): within one weight the order of credits is
    the order of offsets, whatever `g` is, so a step's winner is the best of one heap top
    per weight.

    Args:
        remember_empty: keep a Queue found empty (by a claim) out of the steps across
            passes, until a probe (`begin_pass(recheck=True)`) finds it has due work
            again. Without it (the default), every pass starts with every Queue taking
            part. Either way a Queue never found empty takes part from the first pass.
    """

    def __init__(self, policy: Weighted, *, remember_empty: bool = False) -> None:
        super().__init__(policy)
        self.queues = policy.queues
        self.weights = tuple(weight for _, weight in policy.weights)
        self._heaviest = max(self.weights, default=0)
        self.index = {queue: index for index, queue in enumerate(self.queues)}
        self.remember_empty = remember_empty
        count = len(self.queues)
        self._g = 0
        self._e = [0] * count  # offsets of the Queues that are in
        self._absolute = [0] * count  # credits of the Queues that are out
        self._out: set[int] = set()
        # weight -> heap of -e x span + i (the order of (-e, i) as one int: int
        # comparisons are cheaper in the heap's sifts than tuple ones)
        self._span = max(count, 1)
        self._buckets: dict[int, list[int]] = {}
        # Queues that are in but whose heap entry a simulation took out (it stepped on
        # them): a charge gives them a new entry; the next simulation puts back the rest.
        self._unheaped: set[int] = set()
        self._total_in = 0
        self._current: _WeightedPass[Any] | None = None
        # One Queue (the common first setup): no heap, no simulation (_simulate_one).
        self._single = count == 1
        self._rebuild()

    @property
    def credits(self) -> list[int]:
        """Every Queue's credit, in declaration order (a new list: read-only)."""
        g, e, out, absolute = self._g, self._e, self._out, self._absolute
        return [absolute[i] if i in out else weight * g + e[i]
                for i, weight in enumerate(self.weights)]

    def _rebuild(self) -> None:
        buckets: dict[int, list[int]] = {}
        total = 0
        span = self._span
        for index, weight in enumerate(self.weights):
            if index not in self._out:
                buckets.setdefault(weight, []).append(-self._e[index] * span + index)
                total += weight
        for heap in buckets.values():
            heapq.heapify(heap)
        self._buckets = buckets
        self._unheaped = set()
        self._total_in = total

    def _leave(self, index: int) -> None:
        """Take Queue `index` out of the steps; its credit stands still from now on."""
        self._leave_all((index,))

    def _leave_all(self, indices: Iterable[int]) -> None:
        """`_leave` for each of `indices`."""
        weights, absolute, e, g = self.weights, self._absolute, self._e, self._g
        out, unheaped = self._out, self._unheaped
        gone = 0
        for index in indices:
            weight = weights[index]
            absolute[index] = weight * g + e[index]
            out.add(index)
            unheaped.discard(index)
            gone += weight
        self._total_in -= gone  # their heap entries are stale from now on

    def _join(self, index: int) -> None:
        """Let Queue `index` take part in the steps again, with the credit it left with."""
        weight = self.weights[index]
        self._out.discard(index)
        self._unheaped.discard(index)
        self._e[index] = self._absolute[index] - weight * self._g
        self._total_in += weight
        heapq.heappush(self._buckets.setdefault(weight, []),
                       -self._e[index] * self._span + index)

    def _charge(self, winner: int) -> None:
        """Charge one step over the Queues that are in: each gains its weight, `winner`
        pays the sum of their weights (the nginx update)."""
        self._g += 1
        self._e[winner] -= self._total_in
        if self._single:
            return  # _simulate_one needs no heap
        self._unheaped.discard(winner)
        heapq.heappush(self._buckets[self.weights[winner]],
                       -self._e[winner] * self._span + winner)

    def _simulate(
        self, held: Mapping[int, int], supply: Mapping[int, _Supply], room: int,
        forced: Sequence[int] = (), chain: Callable[[int], bool] | None = None,
        skim: Callable[[_Simulated], bool] | None = None,
    ) -> _Simulated:
        """Simulate steps from the real credits, without changing them, until no Queue can
        be served.

        `held[i]` jobs of Queue i are already claimed and must all get a slot. A Queue whose
        held jobs are used up may take `room` more slots in total (to be claimed) if its
        supply is OPEN; an EMPTY one leaves the steps once its held jobs are used up; a
        BLOCKED one, or an OPEN one when there is no room left, keeps taking part but
        cannot be served. Queues that are out (remembered empty) take no part.

        `forced`: the winners of the first steps, known to be the ones the comparisons
        would pick (`_unchanged_steps`): they are charged without comparing anything.

        `chain` (a room-one round, `_WeightedPass._chain`): offered the winner of the room
        step when that Queue has nothing held and has not won yet, and the steps before it
        would stand without it (`_chain_slack`). True means the pass answered that
        Queue's claim itself, found empty (it has left the steps): the simulation then
        goes on as one without that Queue from the first step, which it is, since the
        steps before stand and each Queue that won one of them paid a total smaller by
        the Queue's weight, so its credit is that much higher (one shift of the offsets
        of the Queues that won).

        `skim` (a round with nothing held, `_WeightedPass._skim`): offered each
        simulation of `_simulate_plain`; True means the pass took that round itself
        (its Queues, all known empty, have left the steps): the simulation then starts
        again as the next round's, from the best heap entries it has (none of those
        Queues is among them), instead of returning.

        Cost: O(steps x (distinct weights + log Queues)) plus the Queues in `held` and
        `supply`; nothing per Queue otherwise. A forced step costs O(log Queues).
        """
        if self._single:
            return self._simulate_one(held, supply, room)
        if not forced and chain is None and not supply and not any(held.values()):
            return self._simulate_plain(room, skim)
        return self._simulate_steps(held, supply, room, forced, chain)

    def _simulate_plain(
        self, room: int, skim: Callable[[_Simulated], bool] | None = None
    ) -> _Simulated:
        """`_simulate` with nothing held, every Queue taking part OPEN, nothing forced and
        no chain: a pass's first round (one simulation per pass in the steady state), and
        every round before a claim comes back short. `_simulate_steps` less all it does
        for held jobs, supply states, forced steps and chains: the same steps, the same
        heap entries taken out (`tests/core/test_dispatch_differential.py` checks both
        against each other)."""
        weights = self.weights
        persistent = self._e
        out = self._out
        buckets = self._buckets
        unheaped = self._unheaped
        span = self._span
        for index in unheaped:  # put back the entries the last simulation took out
            heapq.heappush(buckets[weights[index]], -persistent[index] * span + index)
        unheaped.clear()
        special: set[int] = set()  # the Queues stepped on: their offsets are in `scratch`
        tops: dict[int, tuple[int, int]] = {}
        for weight in buckets:
            self._refresh_top(weight, tops, special, unheaped)
        free = room
        while True:
            simulated = self._plain_round(free, special, tops)
            if skim is None or not skim(simulated):
                return simulated
            # The round's Queues left the steps (and any others `skim` found empty): the
            # best entries are the same but for those of Queues gone out since.
            special.clear()
            for weight, (_, index) in list(tops.items()):
                if index in out:
                    self._refresh_top(weight, tops, special, unheaped)

    def _plain_round(
        self, room: int, special: set[int], tops: dict[int, tuple[int, int]]
    ) -> _Simulated:
        """One simulation of `_simulate_plain`, from the best heap entries `tops`."""
        weights = self.weights
        persistent = self._e
        out = self._out
        buckets = self._buckets
        unheaped = self._unheaped
        heappush, heappop = heapq.heappush, heapq.heappop
        span = self._span
        scratch: dict[int, int] = {}
        g = self._g
        total = self._total_in  # no Queue leaves the steps: the total stands
        heaviest = self._heaviest
        winners: list[int] = []
        wanted: dict[int, int] = {}
        values: list[int] = []  # (and the total of every step is `total`)
        won: dict[int, list[tuple[int, int]]] = {}  # as in `_simulate_steps`
        won_built = False
        paid = None
        rewin = -1
        step = 0
        while room > 0:
            gain = g + 1
            best = -1
            best_value = 0
            for weight, (negative, index) in tops.items():
                value = weight * gain - negative
                if best < 0 or value > best_value or (value == best_value and index < best):
                    best, best_value = index, value
            if paid is None or best < 0 or paid + heaviest * step >= best_value:
                if not won_built:
                    won_built = True
                    for index in dict.fromkeys(winners):
                        heappush(won.setdefault(weights[index], []), (-scratch[index], index))
                for weight, heap in won.items():
                    while heap:
                        negative, index = heap[0]
                        if scratch[index] != -negative:
                            heappop(heap)  # stale
                            continue
                        value = weight * gain - negative
                        if (best < 0 or value > best_value
                                or (value == best_value and index < best)):
                            best, best_value = index, value
                        break
            if best < 0:
                break
            g = gain
            values.append(best_value)
            bound = best_value - total - heaviest * step
            if paid is None or bound > paid:
                paid = bound
            if best in special:
                if rewin < 0:
                    rewin = step
                offset = scratch[best] - total
                wanted[best] += 1
            else:
                special.add(best)
                wanted[best] = 1
                offset = persistent[best] - total
                weight = weights[best]
                # `best` is its heap's best entry (`tops[weight]`): `_refresh_top`,
                # inline while the next entry is a live one (the step's hottest path)
                bucket = buckets[weight]
                heappop(bucket)
                unheaped.add(best)
                if not bucket:
                    del tops[weight]
                else:
                    negative, index = top = divmod(bucket[0], span)
                    if index in out or persistent[index] != -negative or index in special:
                        self._refresh_top(weight, tops, special, unheaped)
                    else:
                        tops[weight] = top
            winners.append(best)
            step += 1
            scratch[best] = offset
            room -= 1
            if won_built:
                heappush(won.setdefault(weights[best], []), (-offset, best))
        return _Simulated(winners, [], wanted, values, [total] * step,
                          step if rewin < 0 else rewin)

    def _simulate_steps(
        self, held: Mapping[int, int], supply: Mapping[int, _Supply], room: int,
        forced: Sequence[int], chain: Callable[[int], bool] | None,
    ) -> _Simulated:
        """`_simulate`, in general."""
        weights = self.weights
        persistent = self._e
        out = self._out
        left = {index: count for index, count in held.items() if count > 0}
        holding = sum(left.values())  # held jobs not given a step yet
        wanted: dict[int, int] = {}
        winners: list[int] = []
        leaves: list[tuple[int, int]] = []
        g = self._g
        total = self._total_in
        scratch: dict[int, int] = {}  # the offsets of the Queues stepped on (or special)
        gone: set[int] = set()  # Queues that left the steps in this simulation
        # Heaps per weight of the special Queues (held jobs, non-OPEN, or stepped on):
        # the persistent heaps skip them.
        local: dict[int, list[tuple[int, int]]] = {}
        special: set[int] = set(left)
        special.update(supply)
        empty, is_open = _Supply.EMPTY, _Supply.OPEN
        for index in sorted(special):
            if index in out:
                continue
            offset = persistent[index]
            if left.get(index, 0) == 0 and supply.get(index) is empty:
                gone.add(index)
                total -= weights[index]
                leaves.append((0, index))
                continue
            scratch[index] = offset
            heapq.heappush(local.setdefault(weights[index], []), (-offset, index))
        buckets = self._buckets
        unheaped = self._unheaped
        # Put back the entries the last simulation took out, but for the Queues this one
        # steps on from the start (a reflow round's held Queues): it would take them out
        # again, and leaving them out is the same.
        span = self._span
        for index in unheaped - special:
            heapq.heappush(buckets[weights[index]], -persistent[index] * span + index)
        unheaped &= special
        # The best entry of each persistent heap: it changes only when its Queue is
        # stepped on (out and the persistent offsets stand still during a simulation).
        tops: dict[int, tuple[int, int]] = {}
        for weight in buckets:
            self._refresh_top(weight, tops, special, unheaped)
        # Heaps per weight of the Queues that won a step of this simulation. Each paid a
        # total, so while the bound on their credits (from the steps they won: `paid` +
        # heaviest x step) is below the best other candidate's, none of them can win:
        # with thousands of Queues that is every step, and their heaps are not looked at,
        # nor built: the first step that needs them builds them from `winners` (one entry
        # per Queue that won, at its offset now: the entries a heap kept up step by step
        # would add are stale or never eligible again, which a look skips anyway).
        won: dict[int, list[tuple[int, int]]] = {}
        won_built = False
        heaviest = self._heaviest
        paid = None  # max over steps i won so far of values[i] - totals[i] - heaviest x i
        values: list[int] = []  # per step: the winner's credit + its weight, and the total
        totals: list[int] = []
        rewin = -1  # the first step won by a Queue that already won in this simulation
        heappush, heappop = heapq.heappush, heapq.heappop
        forcing = len(forced)
        step = 0  # len(winners)
        # Chains (below) shift `totals` and the offsets of the Queues that won: a run of
        # them (thousands at the end of a drain over tenants) adds up the shift in
        # `pending` instead, applied once the loop next reads those (`shifted`). `slack`:
        # `_chain_slack(values, totals)` of the unshifted lists, while they stand.
        pending = 0
        slack: int | float | None = None

        def shifted() -> None:
            nonlocal pending
            totals[:] = [value - pending for value in totals]
            for index in winners:
                scratch[index] += pending
            pending = 0

        while True:
            gain = g + 1
            if step < forcing:
                best = forced[step]
                best_value = weights[best] * gain + scratch.get(best, persistent[best])
            elif room <= 0 and holding <= 0:
                break  # no held job and no room left: no Queue can be served
            else:
                best = -1
                best_value = 0
                if room > 0:
                    for weight, (negative, index) in tops.items():
                        value = weight * gain - negative
                        if (best < 0 or value > best_value
                                or (value == best_value and index < best)):
                            best, best_value = index, value
                if paid is None or best < 0 or paid + heaviest * step >= best_value:
                    if pending:
                        shifted()
                        slack = None
                    if not won_built:
                        won_built = True
                        for index in dict.fromkeys(winners):
                            heappush(won.setdefault(weights[index], []),
                                     (-scratch[index], index))
                    looks: tuple[dict[int, list[tuple[int, int]]], ...] = (local, won)
                else:
                    looks = (local,) if local else ()
                for heaps in looks:
                    for weight, heap in heaps.items():
                        while heap:
                            negative, index = heap[0]
                            # (A `local` entry is at its Queue's persistent offset; once
                            # the Queue won, its offset is below that, shifted or not: it
                            # paid a total above every weight that can leave since.)
                            if (index in gone or scratch[index] != -negative
                                    or not (left.get(index, 0) > 0
                                            or (room > 0
                                                and supply.get(index, is_open) is is_open))):
                                heappop(heap)  # stale, or never eligible again
                                continue
                            value = weight * gain - negative
                            if (best < 0 or value > best_value
                                    or (value == best_value and index < best)):
                                best, best_value = index, value
                            break
                if best < 0:
                    break
                if chain is not None and room == 1 and best not in special and rewin < 0:
                    # (`rewin < 0` is a quick exit: a step won twice fails the bound.)
                    weight = weights[best]
                    if slack is None:
                        slack = self._chain_slack(values, totals)
                    if weight + pending < slack and chain(best):
                        # Answered in the plan, found empty: `best` has left the steps
                        # (out). Every total so far drops by its weight, and every Queue
                        # that won gains it once per win (in `pending`, for `shifted`).
                        total -= weight
                        gone.add(best)
                        if paid is not None:
                            paid += weight
                        pending += weight
                        won = {}  # (built again from `winners` when a step needs it)
                        won_built = False
                        top = tops.get(weight)
                        if top is not None and top[1] == best:
                            self._refresh_top(weight, tops, special, unheaped)
                        continue
            if pending:
                shifted()
            slack = None
            g = gain
            values.append(best_value)
            totals.append(total)
            bound = best_value - total - heaviest * step
            if paid is None or bound > paid:
                paid = bound
            if best in special:
                offset = scratch[best]
                if rewin < 0 and offset != persistent[best]:
                    rewin = step
                offset -= total
            else:
                special.add(best)
                offset = persistent[best] - total
                weight = weights[best]
                top = tops.get(weight)
                if top is not None and top[1] == best:
                    self._refresh_top(weight, tops, special, unheaped)
            winners.append(best)
            step += 1
            scratch[best] = offset
            count = left.get(best, 0)
            if count > 0:
                left[best] = count - 1
                holding -= 1
                if count == 1 and supply.get(best) is empty:
                    gone.add(best)
                    total -= weights[best]
                    leaves.append((step, best))
                    continue
            else:
                wanted[best] = wanted.get(best, 0) + 1
                room -= 1
            if won_built:
                heappush(won.setdefault(weights[best], []), (-offset, best))
        if pending:
            shifted()
        return _Simulated(winners, leaves, wanted, values, totals,
                          len(winners) if rewin < 0 else rewin)

    def _unchanged_steps(
        self, previous: _Simulated, held: Mapping[int, int], short: Collection[int]
    ) -> int:
        """How many first steps of `previous`, a simulation of this pass, the next one
        shares, when since `previous` every Queue it gave slots to was claimed, and the
        Queues in `short` came back short (found empty: they leave the steps once their
        `held` jobs are used up); every other claim came back full.

        A full claim turns the slots it filled into held jobs: the same steps. A Queue in
        `short` keeps its first `held` wins; it leaves the steps after the last of them
        (step `start`, the earliest over `short`), and from its next win on (step `end`)
        the steps differ. Between `start` and `end` a step keeps its winner when no Queue
        that could gain by the Queues leaving can reach it: the Queues that leave win
        nothing there (removing a loser changes no winner), the candidates only lose
        eligibility (less room, fewer Queues), and a smaller total raises only the credit
        of the Queues that already paid a total in the pass, each by at most the leaving
        Queues' weights per win. So a step that is the winner's first win stands if the
        paid Queues' credits (bounded from the steps they won) plus that rise stay below
        the winner's; with thousands of Queues a paid Queue sits a whole total below.
        Otherwise the steps from there are simulated again.
        """
        winners = previous.winners
        end = len(winners)
        if not short:
            return end
        keep = {index: held.get(index, 0) for index in short}
        start = 0 if 0 in keep.values() else end
        wins = dict.fromkeys(keep, 0)
        for position, winner in enumerate(winners):
            count = wins.get(winner)
            if count is None:
                continue
            if count == keep[winner]:
                end = position  # its first slot past its held jobs: not in the next one
                break
            wins[winner] = count + 1
            if count + 1 == keep[winner] and position + 1 < start:
                start = position + 1
        rise = sum(self.weights[index] for index in keep)
        heaviest = self._heaviest
        values, totals = previous.values, previous.totals
        paid = None  # max over earlier steps i of values[i] - totals[i] - heaviest * i
        for position in range(end):
            if position >= start and (position >= previous.rewin or (
                    paid is not None and paid + heaviest * position + rise >= values[position])):
                return position
            bound = values[position] - totals[position] - heaviest * position
            if paid is None or bound > paid:
                paid = bound
        return end

    def _chain_slack(self, values: Sequence[int], totals: Sequence[int]) -> int | float:
        """How much weight may leave from the first step, from Queues that won none of the
        steps simulated so far (`values`, `totals`: none won twice), with every one of
        those steps keeping its winner: they stand when the weight leaving is below this
        (`_unchanged_steps`' bound, for Queues with nothing held; infinite with no step
        after the first). Leaving weights add up: so do the totals they take away."""
        heaviest = self._heaviest
        slack: int | float = math.inf
        paid = None  # max over earlier steps i of values[i] - totals[i] - heaviest * i
        for position, value in enumerate(values):
            if paid is not None:
                slack = min(slack, value - paid - heaviest * position)
            bound = value - totals[position] - heaviest * position
            if paid is None or bound > paid:
                paid = bound
        return slack

    def _refresh_top(
        self, weight: int, tops: dict[int, tuple[int, int]], special: Collection[int],
        unheaped: set[int],
    ) -> None:
        """Find the best entry of the persistent heap of `weight` for `_simulate`: pop the
        stale ones (for good) and those of the Queues the simulation steps on (`special`:
        the charge of the step, if it is served, or the next simulation puts them back)."""
        heap = self._buckets[weight]
        out, persistent, span = self._out, self._e, self._span
        while heap:
            negative, index = top = divmod(heap[0], span)
            if index in out or persistent[index] != -negative:
                heapq.heappop(heap)  # stale for good: dropped
            elif index in special:
                heapq.heappop(heap)
                unheaped.add(index)
            else:
                tops[weight] = top
                return
        tops.pop(weight, None)

    def _simulate_one(
        self, held: Mapping[int, int], supply: Mapping[int, _Supply], room: int
    ) -> _Simulated:
        """`_simulate` for a policy of one Queue: it wins every step it takes part in."""
        if 0 in self._out:
            return _Simulated([], [], {})
        count = held.get(0, 0)
        state = supply.get(0, _Supply.OPEN)
        if state is _Supply.EMPTY:
            return _Simulated([0] * count, [(count, 0)], {})
        extra = room if room > 0 and state is _Supply.OPEN else 0
        return _Simulated([0] * (count + extra), [], {0: extra} if extra else {})

    def begin_pass(
        self, free: int, *, recheck: bool = False, queue_of: Callable[[T], str] | None = None
    ) -> PassPlan[T]:
        if self._current is not None:
            self._current._finish()
        entries = sum(len(heap) for heap in self._buckets.values())
        if entries > 4 * len(self.queues) + 1024:
            self._rebuild()  # drop the stale heap entries
        recheck = self.remember_empty and recheck
        plan: _WeightedPass[T] = _WeightedPass(self, free, recheck, queue_of)
        self._current = plan
        return plan
