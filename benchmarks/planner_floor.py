"""What issue 13's planning target asks of the memory store, against the least a Python
planner can cost: one run, side by side.

    python3 -m benchmarks.planner_floor [--jobs 10000] [--steps 200000] [--repeat 5]

Prints, in one run on this machine:

1. the memory store's one-Queue job: `run_until_idle` drain, pool 20 (as the `queues`
   suite drains it), in microseconds a job, and 5 % of it: the planning budget per job
   that the issue sets ("planning <= 5 % of the per-job cost");
2. the least a smooth weighted round-robin step can cost in Python, over 1,000 and 10,000
   Queues of weights 1-5, all taking part: the leanest exact loop we could write (one heap
   per weight ordered by offset, the best of their tops compared, the winner popped,
   charged and pushed back at its new offset; no reflow, no held jobs, no records for a
   later round, no claims), timed over `--steps` steps;
3. rota's planner per job in the queues suite's drains at 1,000 and 10,000 Queues (the
   suite's replay of the drain's planner calls, least of `--repeat`), and at one Queue.

A planner that simulates the nginx sequence takes at least one step per job served (each
served job is one step of it), so line 2 is a floor under its planning per job. (Reusing
whole periods of the sequence would step less where the Queues taking part stay the same
for many periods, a period being the sum of their weights; not where tenants run dry
within a period or two: 3,000 steps at 1,000 Queues of weights 1-5.) When the floor plus
what a pass costs per job is above the budget, no planner of that shape meets the target
on this store.
Figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import heapq
import time

from benchmarks.suites.queues import measure, planning_seconds, policy_for


def minimal_step_us(queues: int, steps: int) -> float:
    """Microseconds per step of the leanest exact SWRR loop over `queues` Queues (weights
    1-5, all taking part), from zero credits, after a warm-up of one period."""
    weights = [weight for _, weight in policy_for(queues).weights]
    total = sum(weights)
    span = queues
    offsets = [0] * queues  # credit = weight * g + offset
    heaps: dict[int, list[int]] = {}
    for index, weight in enumerate(weights):
        heaps.setdefault(weight, []).append(index)  # -offset * span + index, offsets 0
    for heap in heaps.values():
        heapq.heapify(heap)

    def run(count: int, g: int) -> int:
        heappop, heappush = heapq.heappop, heapq.heappush
        tops = {weight: divmod(heap[0], span) for weight, heap in heaps.items()}
        for _ in range(count):
            g += 1
            best = -1
            best_value = 0
            for weight, (negative, index) in tops.items():
                value = weight * g - negative
                if best < 0 or value > best_value or (value == best_value and index < best):
                    best, best_value = index, value
            weight = weights[best]
            heap = heaps[weight]
            offset = offsets[best] - total
            offsets[best] = offset
            heappop(heap)
            heappush(heap, -offset * span + best)
            tops[weight] = divmod(heap[0], span)
        return g

    g = run(total, 0)  # warm up: one whole period
    start = time.perf_counter()
    run(steps, g)
    return (time.perf_counter() - start) / steps * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    jobs, repeat = options.jobs, options.repeat

    one = max((measure("memory", 1, 1, jobs) for _ in range(repeat)),
              key=lambda m: m.jobs_per_s)
    job_us = 1e6 / one.jobs_per_s
    print(f"memory store, one Queue: {one.jobs_per_s:,.0f} jobs/s = {job_us:.2f} us a job "
          f"(best of {repeat}); 5 % of it: {job_us * 0.05:.2f} us a job", flush=True)
    configs = ((1, 1), (1_000, 10), (1_000, 1_000), (10_000, 100), (10_000, 10_000))
    for queues in (1_000, 10_000):
        floor = min(minimal_step_us(queues, options.steps) for _ in range(repeat))
        print(f"leanest SWRR step over {queues:,} Queues: {floor:.2f} us "
              f"({floor / job_us:.1%} of a one-Queue memory job)", flush=True)
    for queues, backlogged in configs:
        planning = planning_seconds("memory", queues, backlogged, jobs) / jobs * 1e6
        print(f"rota's planner, {queues:,} Queues ({backlogged:,} backlogged): "
              f"{planning:.2f} us a job ({planning / job_us:.1%} of a one-Queue memory job)",
              flush=True)


if __name__ == "__main__":
    main()
