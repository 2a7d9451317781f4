"""A fake, in-memory supply of due jobs for driving the pure dispatch core without a store.

`Backlog` holds a count of due jobs per Queue and answers claims the way the store contract
says (`claim(queues, limit)` takes the first Queue's jobs first, then the next Queue's).
`drive_pass` runs one pass sans-I/O exactly as the worker does: issue each planned claim,
report what it returned (or that it failed), then serve the jobs in dispatch order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rota.core.dispatch import ClaimRequest, Dispatcher, PassPlan

Job = tuple[str, int]  # (Queue, serial within that Queue): unique, so losses show up
UNLIMITED = 10**9


@dataclass
class Backlog:
    """Due jobs per Queue; `fail(n)` says whether claim number n (0-based) raises."""

    due: dict[str, int]
    fail: Callable[[int], bool] = lambda _n: False
    claims: list[tuple[ClaimRequest, int | None]] = field(default_factory=list)
    taken: dict[str, int] = field(default_factory=dict)

    def claim(self, request: ClaimRequest, room: int = UNLIMITED) -> list[Job] | None:
        """The jobs the claim leases, or None when the claim fails (leasing nothing).
        `room`: what its round has left (a round's claims travel in one store call, for
        at most the round's `limit` in all)."""
        if self.fail(len(self.claims)):
            self.claims.append((request, None))
            return None
        jobs: list[Job] = []
        limit = min(request.limit, room)
        for queue in request.queues:
            count = min(self.due.get(queue, 0), limit - len(jobs))
            start = self.taken.get(queue, 0)
            jobs.extend((queue, start + n) for n in range(count))
            self.due[queue] = self.due.get(queue, 0) - count
            self.taken[queue] = start + count
        self.claims.append((request, len(jobs)))
        return jobs

    def claim_round(self, requests: list[ClaimRequest], limit: int) -> list[Job]:
        """A round of claims in one store call, as the store answers it: each claim in
        turn, at most `limit` jobs in all (`PassPlan.round_trip(requests).limit`)."""
        jobs: list[Job] = []
        for request in requests:
            jobs.extend(self.claim(request, limit - len(jobs)) or [])
        return jobs


@dataclass
class PassResult:
    claims: list[tuple[ClaimRequest, int | None]]
    dispatched: list[Job]
    rounds: list[tuple[int, list[ClaimRequest]]]  # (jobs held before the round, its claims)

    @property
    def queues(self) -> list[str]:
        return [queue for queue, _ in self.dispatched]


def drive_pass(
    dispatcher: Dispatcher, free: int, backlog: Backlog, *, serve: bool = True
) -> PassResult:
    """One pass as the worker drives it; on a failed claim the rest of the round is skipped."""
    first_claim = len(backlog.claims)
    plan: PassPlan[Job] = dispatcher.begin_pass(free, queue_of=lambda job: job[0])
    rounds: list[tuple[int, list[ClaimRequest]]] = []
    held = 0
    while requests := plan.next_claims():
        rounds.append((held, requests))
        room = free - held  # a round's claims ask for the pass's room in all
        for request in requests:
            jobs = backlog.claim(request, room)
            if jobs is None:
                plan.claim_failed(request)
                break
            held += len(jobs)
            room -= len(jobs)
            plan.claimed(request, jobs)
    dispatched = plan.dispatch_order()
    if serve:
        for _ in dispatched:
            plan.serve()
    return PassResult(backlog.claims[first_claim:], dispatched, rounds)


def drive(
    dispatcher: Dispatcher, backlog: Backlog, pass_sizes: list[int] | int, jobs: int
) -> list[Job]:
    """Serve passes (sizes cycled) until `jobs` jobs are served or a pass serves nothing."""
    sizes = pass_sizes if isinstance(pass_sizes, list) else [pass_sizes]
    served: list[Job] = []
    index = 0
    while len(served) < jobs:
        free = min(sizes[index % len(sizes)], jobs - len(served))
        index += 1
        result = drive_pass(dispatcher, free, backlog)
        if not result.dispatched and not any(n is None for _, n in result.claims):
            break
        served.extend(result.dispatched)
    return served


def nginx_reference(weights: list[int], count: int) -> list[int]:
    """Smooth weighted round-robin as nginx writes it, independent of rota's code: every
    current += weight; the first maximum wins; winner -= total."""
    current = [0] * len(weights)
    total = sum(weights)
    winners: list[int] = []
    for _ in range(count):
        for i, weight in enumerate(weights):
            current[i] += weight
        best = 0
        for i in range(1, len(weights)):
            if current[i] > current[best]:
                best = i
        current[best] -= total
        winners.append(best)
    return winners
