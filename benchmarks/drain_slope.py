"""Fixed and per-job CPU of a real `rota worker` drain, from two (or more) rota source trees.

    python3 -m benchmarks.drain_slope --trees /work/wt/base . [--stores sqlite postgres] \
        [--small 10000] [--large 50000] [--runs 3]

Each tree drains `--small` and then `--large` noop jobs (`ab_drain.drain_once`: a fresh
store, one `rota worker`, one Strict group, pool 20), the trees alternating, `--runs`
times. The worker's CPU time is a fixed part (interpreter start, imports, start and stop
of the runtime) plus a part per job; two drain sizes separate them: per job =
(CPU(large) - CPU(small)) / (large - small), fixed = CPU(small) - small * per job
(medians). ab_drain's "CPU per job" mixes the two, so a slower start-up reads there as a
slower drain. The same split of the wall-clock time (process start to the last job
finished) follows: a tree can spend the same CPU per job and still drain slower (waits).
Figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from benchmarks.ab_drain import DEFAULT_PG, drain_once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=Path, nargs="+", required=True)
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres"],
                        choices=["sqlite", "postgres"])
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pg-url", default=DEFAULT_PG)
    options = parser.parse_args()
    trees = [tree.resolve() for tree in options.trees]
    sizes = (options.small, options.large)
    for kind in options.stores:
        cpu_ms: dict[tuple[Path, int], list[float]] = {(t, n): [] for t in trees for n in sizes}
        wall_ms: dict[tuple[Path, int], list[float]] = {(t, n): [] for t in trees for n in sizes}
        for run in range(options.runs):
            for jobs in sizes:
                for tree in trees if run % 2 == 0 else trees[::-1]:
                    rate, us_per_job = drain_once(tree, kind, jobs, options.pg_url)
                    cpu_ms[(tree, jobs)].append(us_per_job * jobs / 1e3)
                    wall_ms[(tree, jobs)].append(jobs / rate * 1e3)
        for tree in trees:
            small, large = (statistics.median(cpu_ms[(tree, n)]) for n in sizes)
            per_job_us = (large - small) * 1e3 / (options.large - options.small)
            fixed_ms = small - per_job_us * options.small / 1e3
            print(f"{kind:8} {tree}: CPU {small:,.0f} ms ({options.small:,} jobs), "
                  f"{large:,.0f} ms ({options.large:,}): per job {per_job_us:.2f} us, "
                  f"fixed {fixed_ms:.0f} ms", flush=True)
            small, large = (statistics.median(wall_ms[(tree, n)]) for n in sizes)
            per_job_us = (large - small) * 1e3 / (options.large - options.small)
            fixed_ms = small - per_job_us * options.small / 1e3
            print(f"{kind:8} {tree}: wall per job {per_job_us:.2f} us, fixed {fixed_ms:.0f} ms",
                  flush=True)


if __name__ == "__main__":
    main()
