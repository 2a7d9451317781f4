"""pickup: SQLite pickup latency across processes, and a worker's idle CPU, before and after.

Two rota source trees side by side in one run: "poll" is a base revision (default
`settings.pickup_base`, the main commit before the wake-up sockets: its watcher polls
`PRAGMA data_version` every 20 ms), extracted with `git archive`; "wake" is this tree
(Unix datagram wake-ups, the poll kept as the safety net). Runs alternate poll, wake,
wake, poll, ... so drift on the shared machine falls on both sides.

One run of one tree, every process on that tree's `src` first on PYTHONPATH:
1. a fresh SQLite file, created (migrated) by the tree's rota;
2. process B: `python -m rota.cli worker benchmarks.workers.rota_app:app` (one group, pool
   20, as in the other suites);
3. process A: `benchmarks.workers.pickup_enqueuer` enqueues warm-up probes, waits for them,
   leaves the worker idle 1 s, then enqueues N probes one at a time (5 ms apart), each
   stamped with time.time() just before its enqueue call; the handler records its start
   minus the stamp -> p50 / p99 / max;
4. the worker's idle CPU: its user+system time (/proc/<pid>/stat) over `pickup_idle_s`
   seconds with nothing to do, as a percentage of one core.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import cleanup
from benchmarks.processes import WorkerProcess
from benchmarks.results import SuiteResult
from benchmarks.settings import Settings
from benchmarks.stats import Figure, percentile
from benchmarks.venv import ROOT

SUITE = "pickup"
TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the ")" of the command name: state is field 3, utime 14 and stime 15 (1-based).
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def extract_tree(revision: str) -> Path:
    """`git archive REVISION src` into a temporary directory (removed at exit)."""
    folder = Path(tempfile.mkdtemp(prefix="rota-pickup-base-"))
    cleanup.on_exit(f"remove {folder}", lambda: shutil.rmtree(folder, True))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "src"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _env(tree: Path) -> dict[str, str]:
    return {"PYTHONPATH": f"{tree / 'src'}{os.pathsep}{ROOT}", "PYTHONDONTWRITEBYTECODE": "1"}


def pickup_once(tree: Path, settings: Settings, label: str) -> tuple[list[float], float]:
    """One run on `tree`: the sorted pickup latencies (s) and the idle CPU (% of a core)."""
    with tempfile.TemporaryDirectory(prefix="rota-pickup-") as scratch:
        url = f"sqlite:///{Path(scratch) / 'pickup.db'}"
        latency_file = Path(scratch) / "latency.txt"
        env = {**os.environ, **_env(tree)}
        enqueuer = [sys.executable, "-m", "benchmarks.workers.pickup_enqueuer", url]
        prepared = subprocess.run([*enqueuer, "--prepare"], cwd=ROOT, env=env, check=True,
                                  capture_output=True, text=True)
        print(f"    {label}: {prepared.stdout.strip()}", flush=True)
        worker = WorkerProcess(
            label, [sys.executable, "-m", "rota.cli", "worker", "benchmarks.workers.rota_app:app"],
            {**_env(tree), "ROTA_BENCH_STORE": url, "BENCH_LATENCY_FILE": str(latency_file)},
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
            before = cpu_seconds(worker.popen.pid)
            time.sleep(settings.pickup_idle_s)
            idle_cpu = (cpu_seconds(worker.popen.pid) - before) / settings.pickup_idle_s * 100
        finally:
            worker.stop()
        text = latency_file.read_text() if latency_file.exists() else ""
    values = sorted(float(line) for line in text.split())
    if len(values) != settings.pickup_jobs:
        print(f"    warning: {label} recorded {len(values)} of {settings.pickup_jobs}")
    return values, idle_cpu


def run(settings: Settings) -> SuiteResult:
    result = SuiteResult()
    if not Path("/proc/self/stat").exists():
        result.skipped[SUITE] = "needs Linux /proc for the idle CPU figure"
        return result
    try:
        base = extract_tree(settings.pickup_base)
    except (OSError, subprocess.CalledProcessError) as error:
        result.skipped[SUITE] = f"no base tree {settings.pickup_base!r} (git archive: {error})"
        print(f"  pickup: skipped ({result.skipped[SUITE]})")
        return result
    trees = {f"rota[sqlite] poll ({settings.pickup_base})": base,
             "rota[sqlite] wake (this tree)": ROOT}
    figures: dict[str, dict[str, list[float]]] = {
        name: {"p50 ms": [], "p99 ms": [], "max ms": [], "idle CPU %": []} for name in trees}
    names = list(trees)
    for run_index in range(settings.runs):
        order = names if run_index % 2 == 0 else names[::-1]
        for name in order:
            label = f"pickup-{'poll' if trees[name] == base else 'wake'}-{run_index + 1}"
            values, idle_cpu = pickup_once(trees[name], settings, label)
            if not values:
                continue
            got = figures[name]
            got["p50 ms"].append(percentile(values, 0.50) * 1000)
            got["p99 ms"].append(percentile(values, 0.99) * 1000)
            got["max ms"].append(values[-1] * 1000)
            got["idle CPU %"].append(idle_cpu)
            print(f"  pickup {name} run {run_index + 1}: p50 {got['p50 ms'][-1]:.2f} ms, "
                  f"p99 {got['p99 ms'][-1]:.2f} ms, max {got['max ms'][-1]:.2f} ms, "
                  f"idle CPU {idle_cpu:.2f} %", flush=True)
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
