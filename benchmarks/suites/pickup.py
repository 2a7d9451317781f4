"""pickup: SQLite pickup latency across processes, and a worker's idle CPU, before and after.

Two rota source trees side by side in one run (`benchmarks.ab`'s trees and alternation):
"poll" is a base revision (default `settings.pickup_base`, the last commit before the
wake-up sockets: its watcher polls `PRAGMA data_version` every 20 ms); "wake" is this tree
(Unix datagram wake-ups, the poll kept as the safety net). Runs alternate poll, wake,
wake, poll, ... so drift on the shared machine falls on both sides.

One run of one tree, every process on that tree's `src` first on PYTHONPATH:
1. a fresh SQLite file, created (migrated) by the tree's rota;
2. process B: `python -m rota.cli worker benchmarks.workers.rota_app:app` (one group, pool
   20, as in the other suites);
3. process A (`python -m benchmarks.suites.pickup URL N INTERVAL_S WARMUP`, `enqueuer`
   below) enqueues warm-up probes, waits for them, leaves the worker idle 1 s, then
   enqueues N probes one at a time (5 ms apart), each stamped with time.time() just
   before its enqueue call; the handler records its start minus the stamp -> p50 / p99 /
   max;
4. the worker's idle CPU: its user+system time (/proc/<pid>/stat) over `pickup_idle_s`
   seconds with nothing to do, as a percentage of one core.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.ab import Tree, alternate, resolve_tree
from benchmarks.processes import WorkerProcess, wait_drained
from benchmarks.results import Figure, SuiteResult, percentile
from benchmarks.settings import Settings
from benchmarks.targets import paced
from benchmarks.targets.rota_target import APP, SQLiteCounter, tree_env
from benchmarks.venv import ROOT
from benchmarks.workers import read_pickups

SUITE = "pickup"


def pickup_once(tree: Tree, settings: Settings, label: str) -> tuple[list[float], float]:
    """One run on `tree`: the sorted pickup latencies (s) and the idle CPU (% of a core)."""
    with tempfile.TemporaryDirectory(prefix="rota-pickup-") as scratch:
        url = f"sqlite:///{Path(scratch) / 'pickup.db'}"
        latency_file = Path(scratch) / "latency.txt"
        env = {**os.environ, **tree_env(tree.src)}
        enqueuer = [sys.executable, "-m", "benchmarks.suites.pickup", url]
        prepared = subprocess.run([*enqueuer, "--prepare"], cwd=ROOT, env=env, check=True,
                                  capture_output=True, text=True)
        print(f"    {label}: {prepared.stdout.strip()}", flush=True)
        worker = WorkerProcess(
            label, [sys.executable, "-m", "rota.cli", "worker", APP],
            {**tree_env(tree.src), "ROTA_BENCH_STORE": url,
             "BENCH_LATENCY_FILE": str(latency_file)},
        )
        try:
            subprocess.run(
                [*enqueuer, str(settings.pickup_jobs), str(settings.pickup_interval_s),
                 str(settings.pickup_warmup_jobs)],
                cwd=ROOT, env=env, check=True, timeout=600,
            )
            if not worker.alive():
                raise RuntimeError(f"worker {label} exited:\n{worker.tail()}")
            time.sleep(1.0)
            before = worker.cpu_s()
            time.sleep(settings.pickup_idle_s)
            idle_cpu = (worker.cpu_s() - before) / settings.pickup_idle_s * 100
        finally:
            worker.stop()
        return read_pickups(latency_file, settings.pickup_jobs, label), idle_cpu


def run(settings: Settings) -> SuiteResult:
    result = SuiteResult()
    if not Path("/proc/self/stat").exists():
        result.skipped[SUITE] = "needs Linux /proc for the idle CPU figure"
        return result
    try:
        base = resolve_tree("poll", settings.pickup_base)
    except (OSError, SystemExit) as error:
        result.skipped[SUITE] = f"no base tree {settings.pickup_base!r}: {error}"
        print(f"  pickup: skipped ({result.skipped[SUITE]})")
        return result
    trees = {f"rota[sqlite] poll ({settings.pickup_base})": base,
             "rota[sqlite] wake (this tree)": Tree("wake", ROOT / "src")}
    figures: dict[str, dict[str, list[float]]] = {
        name: {"p50 ms": [], "p99 ms": [], "max ms": [], "idle CPU %": []} for name in trees}

    def measure(name: str, run_index: int) -> None:
        label = f"pickup-{trees[name].label}-{run_index + 1}"
        values, idle_cpu = pickup_once(trees[name], settings, label)
        if not values:
            return
        got = figures[name]
        got["p50 ms"].append(percentile(values, 0.50) * 1000)
        got["p99 ms"].append(percentile(values, 0.99) * 1000)
        got["max ms"].append(values[-1] * 1000)
        got["idle CPU %"].append(idle_cpu)
        print(f"  pickup {name} run {run_index + 1}: p50 {got['p50 ms'][-1]:.2f} ms, "
              f"p99 {got['p99 ms'][-1]:.2f} ms, max {got['max ms'][-1]:.2f} ms, "
              f"idle CPU {idle_cpu:.2f} %", flush=True)

    alternate(list(trees), settings.runs, measure)
    note = (f"{settings.pickup_jobs:,} jobs {settings.pickup_interval_s * 1000:g} ms apart, "
            f"other process; idle {settings.pickup_idle_s:g} s")
    for name, got in figures.items():
        if not got["p50 ms"]:
            result.skipped[name] = "no latency recorded"
            continue
        for metric, values in got.items():
            result.add(SUITE, name, metric, Figure.of(values, "%" if "CPU" in metric else "ms",
                                                      note))
    return result


def enqueuer(argv: list[str]) -> int:
    """Process A: `URL --prepare` creates (migrates) the store and exits; `URL N INTERVAL_S
    WARMUP` enqueues WARMUP unrecorded probes, waits until the worker (process B) finished
    them, leaves it idle for a second, then enqueues N recorded probes one at a time
    INTERVAL_S apart, each stamped with time.time() just before its enqueue call, and
    waits until all are finished. Run with the tree under test first on PYTHONPATH."""
    import rota
    from benchmarks.workers.rota_app import make_app

    url = argv[0]
    app = make_app(url)
    counter = SQLiteCounter(Path(url.removeprefix("sqlite:///")))
    try:
        if argv[1:] == ["--prepare"]:
            app.store.count_jobs()
            print(f"rota from {rota.__file__}", flush=True)
            return 0
        count, interval_s, warmup = int(argv[1]), float(argv[2]), int(argv[3])
        probe = app.jobs["probe"]
        paced(warmup, 0.01, lambda _i: probe.enqueue(time.time(), False))
        wait_drained(counter, [], 120, 0.05)
        time.sleep(1.0)
        paced(count, interval_s, lambda _i: probe.enqueue(time.time(), True))
        wait_drained(counter, [], 120, 0.05)
        return 0
    finally:
        counter.close()
        app.close()


if __name__ == "__main__":
    sys.exit(enqueuer(sys.argv[1:]))
