"""The plan of one pass, driven sans-I/O by its caller: the claims it asks for, how a round
of them travels to the store as one round trip, and what the caller reports back.

Pure: no I/O, no clock, no asyncio, no randomness.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from rota.core.policy import DispatchPolicy

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    """One claim a pass wants issued: up to `limit` due jobs from `queues`, in that order.

    Strict asks all its Queues in one claim. Weighted asks one Queue per claim, except its
    *sweep* (several Queues, the last claim of a pass), which the store answers like
    Strict's claim: the first Queue's due jobs first, then the next Queue's.

    A *probe* (`probe=True`, limit 0) asks no jobs: it asks which of `queues` have due work,
    and is answered with `PassPlan.probed`."""

    queues: tuple[str, ...]
    limit: int
    probe: bool = False


@dataclass(frozen=True, slots=True)
class RoundTrip:
    """The one store call that carries a round of claims:
    `store.claim(queues, limit, limits=limits, probe=probe)`.

    `limits` is None for a claim over `queues` in order (Strict's, a sweep, a round of one
    Queue), else one count per Queue (each Queue's count is its claim). `probe`: the
    Queues to report on, which of them have due work left after the claim."""

    queues: tuple[str, ...]
    limit: int
    limits: tuple[int, ...] | None
    probe: tuple[str, ...]


def check_count(limit: int, items: Sequence[object]) -> None:
    """A claim that could give at most `limit` jobs gave `items`."""
    if len(items) > limit:
        raise ValueError(
            f"a claim for {limit} jobs returned {len(items)}; the store broke the claim "
            "contract"
        )


class PassPlan(Generic[T]):
    """One pass of one Worker Group. The caller drives it:

        while requests := plan.next_claims():      # a round: one store round trip
            trip = plan.round_trip(requests)
            answer = store.claim(trip.queues, trip.limit, limits=trip.limits,
                                 probe=trip.probe, ...)
            plan.record_round(requests, answer, due=answer.due,
                              controlled=answer.controlled)
        for job in plan.dispatch_order():          # slot order
            plan.serve()                           # charge this job's step, then run it

    (or `claimed` / `claim_failed` / `probed` per request, as `record_round` does).
    `next_claims` returns a non-empty list at most 2 x (served Queues) + 1 times a pass.
    """

    # Whether a claim round also asks which of its Queues have due work left (a group
    # that remembers empty Queues learns that a claim drained a Queue without asking it).
    probes_claims = False
    queue_of: Callable[[T], str] | None = None

    def next_claims(self) -> list[ClaimRequest]:
        """The next round of claims; an empty list when the pass has claimed all it will."""
        raise NotImplementedError  # pragma: no cover

    def claimed(
        self, request: ClaimRequest, items: Sequence[T], *,
        controlled: Collection[str] = (), drained: Collection[str] = (),
    ) -> None:
        """Record what a claim returned, in the order the store returned it.

        `controlled`: Queues of the claim that are paused or limited (a short claim of
        one is found empty for this pass only, not remembered). `drained`: Queues of the
        claim that have no due job left after it (found empty, and remembered)."""
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

    def dispatch_order(self) -> list[T]:
        """Every claimed item, in slot order. Ends the claiming."""
        raise NotImplementedError  # pragma: no cover

    def serve(self) -> None:
        """Charge the group's dispatch state for the next item in dispatch order."""
        raise NotImplementedError  # pragma: no cover

    def skip(self) -> None:
        """Pass over the next item in dispatch order without charging anything: it was
        handed back unserved."""
        raise NotImplementedError  # pragma: no cover

    @property
    def claims_issued(self) -> int:
        """Claims answered so far (returned or failed)."""
        raise NotImplementedError  # pragma: no cover

    def round_trip(self, requests: Sequence[ClaimRequest]) -> RoundTrip:
        """The store call that carries the round `requests` (from `next_claims`)."""
        first = requests[0]
        if first.probe:
            return RoundTrip((), 0, None, first.queues)
        if len(requests) == 1:
            queues, limits = first.queues, None
        else:
            queues = tuple(request.queues[0] for request in requests)
            limits = tuple(request.limit for request in requests)
        limit = first.limit if limits is None else sum(limits)
        return RoundTrip(queues, limit, limits, queues if self.probes_claims else ())

    def record_round(
        self, requests: Sequence[ClaimRequest], jobs: Sequence[T], *,
        due: Collection[str] | None, controlled: Collection[str] = (),
    ) -> None:
        """Record the store's answer to `round_trip(requests)`: the jobs it leased, in its
        order; `due`, the probed Queues with due work left (None: the store did not say,
        so any of them may have work); `controlled`, its Queues that are paused or
        limited."""
        first = requests[0]
        if first.probe:
            self.probed(first, first.queues if due is None else due)
            return
        drained = () if due is None or not self.probes_claims else [
            queue for request in requests for queue in request.queues if queue not in due]
        if len(requests) == 1:
            self.claimed(first, jobs, controlled=controlled, drained=drained)
            return
        queue_of = self.queue_of
        if queue_of is None:
            raise ValueError("a round of several claims needs begin_pass(free, queue_of=...)")
        by_queue: dict[str, list[T]] = {}
        for queue, group in itertools.groupby(jobs, queue_of):
            by_queue.setdefault(queue, []).extend(group)
        for request in requests:
            self.claimed(request, by_queue.pop(request.queues[0], []),
                         controlled=controlled, drained=drained)
        if by_queue:
            raise ValueError("a claim returned jobs of a Queue it did not name; the store "
                             "broke the claim contract")


class Dispatcher:
    """A Worker Group's dispatch state, kept for the group's life."""

    policy: DispatchPolicy

    @property
    def probe_pending(self) -> bool:
        """Whether the next pass first probes the Queues the group holds for empty (a
        drive must run that pass before it calls the group idle)."""
        return False

    def note_work(self, queue: str) -> None:
        """A wake-up hint: jobs were enqueued into `queue` (any thread)."""

    def take_hints(self) -> None:
        """Act on the wake-up hints noted so far, for the next pass. Its caller reads the
        pass's time after this, never before: a hinted job was committed, so due, before
        its hint, and a pass that reads its time first may find it not yet due and hold
        its Queue for empty."""

    def begin_pass(
        self, free: int, *, recheck: bool = False, queue_of: Callable[[T], str] | None = None
    ) -> PassPlan[T]:
        """Plan one pass into `free` free Worker slots (0 means no claim at all).

        `recheck`: probe the Queues held for empty first (the worker asks every poll
        interval). `queue_of`: the Queue of a claimed item; a Weighted pass needs it to
        answer a claim over several Queues."""
        raise NotImplementedError  # pragma: no cover
