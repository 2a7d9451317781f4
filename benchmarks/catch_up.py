"""Bounded catch-up (DESIGN.md), checked on the real planner over many small cases.

One Queue idles (no due work) while the others are backlogged; after `idle` jobs it gets
work again, and in the next total-weight window of served jobs it may get at most one turn
more than its weight. Two sweeps, both printing cases, returns over the bound, and the
largest |credit| / total weight seen when the idle Queue returns (a true nginx schedule
keeps it below 1):

    .venv/bin/python -m benchmarks.catch_up grid 4 6 7,13,33,48,59,64 1,60,181,397
        every weight vector 1..6 for 4 Queues, every idle Queue, those pools and idle
        lengths (124,416 cases);
    .venv/bin/python -m benchmarks.catch_up random 1500 7
        random 4-6 Queues, weights 1-20, pools 1-64, returning after each of 30 passes and
        after a further partial pass of random size.

Runs in the project's .venv (no benchmark peers needed); pure Python, single-threaded, and
slow: ~2.5 ms a case on a loaded 2-core machine.
"""

from __future__ import annotations

import copy
import itertools
import random
import sys
import time
from collections.abc import Sequence

from rota import Weighted
from rota.core.dispatch import ClaimRequest, Dispatcher, WeightedDispatcher

NAMES = "abcdefghij"
UNLIMITED = 10**9
Job = tuple[str, int]


def one_pass(dispatcher: Dispatcher, free: int, due: dict[str, int]) -> list[str]:
    """One pass against `due` (due jobs per Queue, taken as claimed); the Queues served."""
    plan = dispatcher.begin_pass(free, queue_of=lambda job: job[0])

    def claim(request: ClaimRequest) -> list[Job]:
        jobs: list[Job] = []
        for queue in request.queues:
            take = min(due[queue], request.limit - len(jobs))
            due[queue] -= take
            jobs.extend((queue, n) for n in range(take))
        return jobs

    while requests := plan.next_claims():
        for request in requests:
            plan.claimed(request, claim(request))
    served = [queue for queue, _ in plan.dispatch_order()]
    for _ in served:
        plan.serve()
    return served


def drive(dispatcher: Dispatcher, due: dict[str, int], pool: int, jobs: int) -> list[str]:
    served: list[str] = []
    while len(served) < jobs:
        got = one_pass(dispatcher, min(pool, jobs - len(served)), due)
        if not got:
            break
        served.extend(got)
    return served


def dispatcher_for(weights: Sequence[int]) -> WeightedDispatcher:
    dispatcher = Dispatcher.for_policy(Weighted(list(zip(NAMES, weights, strict=False))))
    assert isinstance(dispatcher, WeightedDispatcher)
    return dispatcher


def window_after(
    dispatcher: WeightedDispatcher, weights: Sequence[int], idle: int, pool: int
) -> tuple[int, float]:
    """The idle Queue returns now: its turns over its weight in the next window, and the
    spread of the credits it returns to (max |credit| / total weight)."""
    total = sum(weights)
    spread = max(abs(credit) for credit in dispatcher.credits) / total
    due = dict.fromkeys(NAMES[: len(weights)], UNLIMITED)
    window = drive(dispatcher, due, pool, total)
    return window.count(NAMES[idle]) - weights[idle], spread


def idle_due(weights: Sequence[int], idle: int) -> dict[str, int]:
    due = dict.fromkeys(NAMES[: len(weights)], UNLIMITED)
    due[NAMES[idle]] = 0
    return due


def grid(count: int, top: int, pools: list[int], lengths: list[int]) -> str:
    cases = over = 0
    spread = 0.0
    first: list[object] = []
    for weights in itertools.product(range(1, top + 1), repeat=count):
        for idle, pool, length in itertools.product(range(count), pools, lengths):
            dispatcher = dispatcher_for(weights)
            drive(dispatcher, idle_due(weights, idle), pool, length)
            excess, seen = window_after(dispatcher, weights, idle, pool)
            cases += 1
            spread = max(spread, seen)
            if excess > 1:
                over += 1
                first = first or [weights, idle, length, pool, excess]
    return (f"{count} Queues, weights 1..{top}, pools {pools}, idle lengths {lengths}: "
            f"{cases} cases, {over} over the bound, max |credit|/W {spread:.2f}"
            + (f", first {first}" if first else ""))


def random_returns(cases: int, seed: int) -> str:
    rng = random.Random(seed)
    returns = over = 0
    spread = 0.0
    first: list[object] = []
    for _ in range(cases):
        weights = [rng.randint(1, 20) for _ in range(rng.randint(4, 6))]
        idle, pool = rng.randrange(len(weights)), rng.randint(1, 64)
        dispatcher = dispatcher_for(weights)
        for passes in range(30):
            for partial in (0, rng.randint(1, 63)):
                trial = copy.deepcopy(dispatcher)
                if partial:
                    one_pass(trial, partial, idle_due(weights, idle))
                excess, seen = window_after(trial, weights, idle, pool)
                returns += 1
                spread = max(spread, seen)
                if excess > 1:
                    over += 1
                    first = first or [weights, idle, passes * pool + partial, pool, excess]
            one_pass(dispatcher, pool, idle_due(weights, idle))
    return (f"{cases} random cases (seed {seed}), {returns} returns, {over} over the bound, "
            f"max |credit|/W {spread:.2f}" + (f", first {first}" if first else ""))


def main(argv: list[str]) -> int:
    start = time.monotonic()
    if argv[:1] == ["grid"] and len(argv) == 5:
        print(grid(int(argv[1]), int(argv[2]), [int(x) for x in argv[3].split(",")],
                   [int(x) for x in argv[4].split(",")]))
    elif argv[:1] == ["random"] and len(argv) == 3:
        print(random_returns(int(argv[1]), int(argv[2])))
    else:
        print(__doc__)
        return 2
    print(f"({time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
