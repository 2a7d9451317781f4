"""latency: an idle worker; jobs enqueued one at a time ~5 ms apart from the harness (a
process other than the worker); each handler records time.time() at its start minus the
time.time() stamped into its payload just before the enqueue call -> p50, p99, max.

Before the measured jobs a few warm-up jobs are run and waited for, then the worker is
left idle for a second, so what is measured is pickup by an idle, warmed-up worker.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.processes import WorkerProcess, wait_drained
from benchmarks.results import Figure, SuiteResult, percentile
from benchmarks.settings import Settings
from benchmarks.targets import Target, available, run_label
from benchmarks.workers import read_pickups


def latency_once(target: Target, settings: Settings, label: str) -> list[float]:
    """One run: the recorded pickup latencies in seconds, sorted."""
    target.prepare()
    with tempfile.TemporaryDirectory(prefix="rota-bench-") as scratch:
        latency_file = Path(scratch) / "latency.txt"
        try:
            spec = target.worker(latency_file)
            worker = WorkerProcess(label, spec.argv, spec.env)
            try:
                target.enqueue_probes(settings.latency_warmup_jobs, 0.01, record=False)
                wait_drained(target.unfinished, [worker], 60, 0.05)
                time.sleep(1.0)
                target.enqueue_probes(settings.latency_jobs, settings.latency_interval_s,
                                      record=True)
                wait_drained(target.unfinished, [worker], 60, 0.05)
            finally:
                worker.stop()
        finally:
            target.discard()
        return read_pickups(latency_file, settings.latency_jobs, target.name)


def run(targets: list[Target], settings: Settings) -> SuiteResult:
    result = SuiteResult()
    for target in available(targets, "latency", result):
        p50s: list[float] = []
        p99s: list[float] = []
        maxes: list[float] = []
        for run_index in range(settings.runs):
            values = latency_once(target, settings, run_label("latency", target, run_index))
            if not values:
                continue
            p50s.append(percentile(values, 0.50) * 1000)
            p99s.append(percentile(values, 0.99) * 1000)
            maxes.append(values[-1] * 1000)
            print(f"  latency {target.name} run {run_index + 1}: p50 {p50s[-1]:.2f} ms, "
                  f"p99 {p99s[-1]:.2f} ms, max {maxes[-1]:.2f} ms", flush=True)
        if not p50s:
            result.skipped[target.name] = "no latency recorded"
            continue
        note = f"{settings.latency_jobs:,} jobs, {settings.latency_interval_s * 1000:g} ms apart"
        result.add("latency", target.name, "p50 ms", Figure.of(p50s, "ms", note))
        result.add("latency", target.name, "p99 ms", Figure.of(p99s, "ms", note))
        result.add("latency", target.name, "max ms", Figure.of(maxes, "ms", note))
    return result
