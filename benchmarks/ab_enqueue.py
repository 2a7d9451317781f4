"""Before/after: enqueue rate of two rota source trees, alternating, on SQLite and
PostgreSQL (the cost of unique jobs' index for jobs without a key, and of a key).

    python3 benchmarks/ab_enqueue.py --before /tmp/rota-old/src --after src \
        [--runs 5] [--jobs 3000] [--batch 1 100] [--stores sqlite postgres]

Each run is a child process importing rota from one tree (PYTHONPATH) that enqueues
`--jobs` no-op jobs in calls of `--batch` jobs on a fresh store, and prints jobs/s. Runs
alternate before, after, after, before, ... so drift on a shared machine falls on both
sides. For the after tree it also measures the same with a distinct key per job
("after, keyed"). Prints every run, then the medians. Figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(store_kind: str, url: str, jobs: int, batch: int, keyed: bool) -> None:
    import rota
    from rota.core.jobs import NewJob
    from rota.store import open_store

    print(Path(rota.__file__).resolve().parent.parent)  # which tree this run measures
    with tempfile.TemporaryDirectory() as folder:
        schema = f"rota_bench_{uuid.uuid4().hex[:8]}"
        if store_kind == "sqlite":
            store_url = f"sqlite:///{folder}/bench.db"
        else:
            store_url = f"{url}{'&' if '?' in url else '?'}schema={schema}"
        store = open_store(store_url)
        now = datetime.now(UTC)
        try:
            store.enqueue([NewJob("warm", "bench", now)], now)  # migrate, open the pool
            started = time.perf_counter()
            for start in range(0, jobs, batch):
                chunk = [
                    NewJob("noop", "bench", now, "[1]", "{}",
                           **({"key": f"k{n}"} if keyed else {}))  # type: ignore[arg-type]
                    for n in range(start, min(start + batch, jobs))
                ]
                store.enqueue(chunk, now)
            rate = jobs / (time.perf_counter() - started)
        finally:
            store.close()
            if store_kind == "postgres":
                import psycopg

                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    print(f"{rate:.1f}")


def run_child(src: str, options: argparse.Namespace, store: str, batch: int,
              keyed: bool) -> float:
    env = dict(os.environ, PYTHONPATH=f"{Path(src).resolve()}{os.pathsep}{HERE}")
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--url", options.url,
               "--jobs", str(options.jobs), "--batch", str(batch), "--stores", store]
    if keyed:
        command.append("--keyed")
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
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 100])
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--keyed", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.stores[0], options.url, options.jobs, options.batch[0], options.keyed)
        return
    if not options.before or not options.after:
        parser.error("--before and --after are required")
    print(f"enqueue, {options.jobs:,} noop jobs per run; {options.runs} alternating runs; "
          "jobs/s")
    for store in options.stores:
        for batch in options.batch:
            results: dict[str, list[float]] = {"before": [], "after": [], "after, keyed": []}
            for run in range(options.runs):
                order = ["before", "after"] if run % 2 == 0 else ["after", "before"]
                for label in [*order, "after, keyed"]:
                    src = options.before if label == "before" else options.after
                    rate = run_child(src, options, store, batch, label == "after, keyed")
                    results[label].append(rate)
                    print(f"  {store}, batch {batch}, run {run + 1}, {label:>12}: "
                          f"{rate:>9,.0f}", flush=True)
            for label, rates in results.items():
                print(f"{store:>8}, batch {batch:>4}, {label:>12}: median "
                      f"{statistics.median(rates):>9,.0f}  (min {min(rates):,.0f}, "
                      f"max {max(rates):,.0f})", flush=True)


if __name__ == "__main__":
    main()
