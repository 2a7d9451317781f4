"""The cost of finishing the parents of one fan-in child, store alone, on an SQLite file,
against as many plain jobs: rota trees side by side, runs alternating (`benchmarks.ab`).

Each run enqueues N noop jobs on a fresh SQLite file (fan-in: and one child after all of
them), claims them all, then times `store.complete` in batches of 100 leases in one
process, no worker. Finishing a parent should cost the same whatever its child's fan-in,
so fan-in / plain should stay near 1 as N grows; it grows with N where each parent's end
rewrites something the size of the child's list of parents.

    .venv/bin/python -m benchmarks.fan_in --before main --after . --jobs 10000 30000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks import cleanup
from benchmarks.ab import Tree, alternate, checked_trees
from benchmarks.targets.rota_target import tree_env
from benchmarks.venv import ROOT

QUEUE = "bench"
BATCH = 100
CLAIM = 1_000
CASES = ("plain", "fan-in")


def child(path: str, case: str, jobs: int) -> dict[str, object]:
    """One run, under the tree on PYTHONPATH: the seconds the completes took."""
    import rota
    from rota.core.jobs import JobState, NewJob
    from rota.store.sqlite import SQLiteStore

    now = datetime.now(UTC)
    store = SQLiteStore(path)
    try:
        ids: list[int] = []
        for start in range(0, jobs, 5_000):
            ids += store.enqueue([NewJob("noop", QUEUE, now)
                                  for _ in range(min(5_000, jobs - start))], now)
        if case == "fan-in":
            store.enqueue([NewJob("noop", "child", now, parents=tuple(ids))], now)
        leases = []
        while len(leases) < jobs:
            leases += [record.lease for record in store.claim(
                [QUEUE], CLAIM, now=now, owner="bench",
                lease_expires_at=now + timedelta(hours=1))]
        began = time.perf_counter()
        for start in range(0, jobs, BATCH):
            store.complete(leases[start:start + BATCH], now)  # type: ignore[arg-type]
        elapsed = time.perf_counter() - began
        if case == "fan-in":  # the child was released by its last parent
            assert store.count_jobs().get(("child", JobState.SCHEDULED)) == 1
    finally:
        store.close()
    return {"rota": str(Path(rota.__file__).resolve().parent.parent), "seconds": elapsed}


def run(tree: Tree, case: str, jobs: int) -> float:
    with tempfile.TemporaryDirectory(prefix="rota-fan-in-") as folder:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.fan_in", "--child",
             str(Path(folder) / "rota.db"), case, str(jobs)],
            cwd=ROOT, env={**os.environ, **tree_env(tree.src)}, check=True,
            capture_output=True, text=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(got["rota"]) != tree.src:
        raise SystemExit(f"{tree.label}: the child did not import {tree.src}")
    return float(got["seconds"])


def series(trees: list[Tree], jobs: int, runs: int) -> None:
    """Every tree's plain and fan-in runs at one size, alternating; then the medians."""
    seconds: dict[tuple[Tree, str], list[float]] = {}

    def measure(variant: tuple[Tree, str], number: int) -> None:
        took = run(*variant, jobs)
        seconds.setdefault(variant, []).append(took)
        print(f"  {jobs:,} run {number + 1} {variant[0].label} {variant[1]}: {took:.2f} s",
              flush=True)

    alternate([(tree, case) for tree in trees for case in CASES], runs, measure)
    print(f"{jobs:,} jobs, complete in batches of {BATCH}, median of {runs}:")
    for tree in trees:
        plain, fan_in = (statistics.median(seconds[(tree, case)]) for case in CASES)
        print(f"  {tree.label:<8} plain {plain:7.2f} s  fan-in {fan_in:7.2f} s  "
              f"fan-in/plain {fan_in / plain:5.2f}x", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", help="the reference tree")
    parser.add_argument("--after", nargs="*", default=[], help="trees compared with it")
    parser.add_argument("--jobs", type=int, nargs="+", default=[10_000, 30_000])
    parser.add_argument("--runs", type=int, default=2, help="runs of each, alternating")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        path, case, jobs = options.child
        print(json.dumps(child(path, case, int(jobs))))
        return 0
    if options.before is None:
        parser.error("--before is required")
    cleanup.install()
    trees = checked_trees(options.before, options.after)
    for jobs in options.jobs:
        series(trees, jobs, options.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
