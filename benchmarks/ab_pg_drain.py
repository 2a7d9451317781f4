"""Before/after: the PostgreSQL store-only drain of two rota source trees, alternating.

    python3 benchmarks/ab_pg_drain.py --before /tmp/rota-old/src --after src \
        [--runs 5] [--jobs 50000] [--batch 20] [--workers 1 4] [--limit N]

Each run is a child process importing rota from one tree (PYTHONPATH), running
`pg_store_throughput.drain` (claim `--batch` + one batched complete, per worker thread, in
a fresh schema) and printing jobs/s. Runs alternate before, after, after, before, ... so
that drift on a shared machine falls on both sides. `--limit N` adds, for the after tree
only, a drain of a Queue with a concurrency limit of N (so every claim takes the limited
path; N above the jobs in flight never binds). Prints every run, then the medians.
Figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(url: str, jobs: int, batch: int, workers: int, limit: int | None) -> None:
    import pg_store_throughput

    import rota

    print(Path(rota.__file__).resolve().parent.parent)  # which tree this run measures

    if limit is not None:
        # Every store of the run is opened on the fresh schema fresh_store creates; set the
        # limit there before the drain starts.
        original = pg_store_throughput.enqueue_all

        def enqueue_then_limit(store: object, count: int, chunk: int) -> float:
            rate = original(store, count, chunk)  # type: ignore[arg-type]
            store.set_queue_limit(pg_store_throughput.QUEUE, limit)  # type: ignore[attr-defined]
            return rate

        pg_store_throughput.enqueue_all = enqueue_then_limit  # type: ignore[assignment]
    print(f"{pg_store_throughput.drain(url, jobs, batch, workers):.1f}")


def run_child(src: str, options: argparse.Namespace, workers: int, limit: int | None) -> float:
    env = dict(os.environ, PYTHONPATH=f"{Path(src).resolve()}{os.pathsep}{HERE}")
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--url", options.url,
               "--jobs", str(options.jobs), "--batch", str(options.batch),
               "--workers", str(workers)]
    if limit is not None:
        command += ["--limit", str(limit)]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    tree, rate = done.stdout.strip().splitlines()[-2:]
    if Path(tree) != Path(src).resolve():
        raise SystemExit(f"the child imported rota from {tree}, not from {src}")
    return float(rate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--before", help="the old tree's src directory")
    parser.add_argument("--after", help="the new tree's src directory")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.url, options.jobs, options.batch, options.workers[0], options.limit)
        return
    if not options.before or not options.after:
        parser.error("--before and --after are required")
    print(f"PostgreSQL store-only drain, {options.jobs:,} noop jobs, claim {options.batch} "
          f"+ complete; {options.runs} alternating runs; jobs/s")
    for workers in options.workers:
        results: dict[str, list[float]] = {"before": [], "after": []}
        if options.limit is not None:
            results[f"after, limit {options.limit}"] = []
        for run in range(options.runs):
            order = ["before", "after"] if run % 2 == 0 else ["after", "before"]
            for label in order:
                src = options.before if label == "before" else options.after
                rate = run_child(src, options, workers, None)
                results[label].append(rate)
                print(f"  {workers} worker(s), run {run + 1}, {label:>6}: {rate:>9,.0f}",
                      flush=True)
            if options.limit is not None:
                label = f"after, limit {options.limit}"
                rate = run_child(options.after, options, workers, options.limit)
                results[label].append(rate)
                print(f"  {workers} worker(s), run {run + 1}, {label}: {rate:>9,.0f}",
                      flush=True)
        for label, rates in results.items():
            print(f"{workers} worker(s) {label:>16}: median {statistics.median(rates):>9,.0f}"
                  f"  (min {min(rates):,.0f}, max {max(rates):,.0f})")


if __name__ == "__main__":
    main()
