"""memory: does a rota worker's memory stay flat while it drains a big backlog?

N noop jobs (1,000,000; --quick 50,000) are enqueued into a fresh SQLite store, then one
`rota worker` (pool 20, as in the drain suite) drains them while the harness samples the
worker's resident set size (VmRSS from /proc/<pid>/status) every second. "Flat" means no
growth proportional to the jobs processed: the figures are the RSS once the worker has
warmed up (the sample at 10 % of the jobs done), the peak, the last sample, and the growth
per 100,000 jobs between the 10 % and 90 % marks (a least-squares slope of RSS over jobs
done). One run (`settings.memory_runs`): a million-job drain takes about a minute here.
"""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks.processes import WorkerProcess
from benchmarks.results import Figure, SuiteResult
from benchmarks.settings import Settings
from benchmarks.targets.rota_target import RotaTarget


def rss_mib(pid: int) -> float:
    """The process's resident set size in MiB (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over x (0 with fewer than two distinct x)."""
    if len(points) < 2:
        return 0.0
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    var = sum((x - mean_x) ** 2 for x, _ in points)
    if var == 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / var


def drain_sampled(target: RotaTarget, count: int, settings: Settings,
                  label: str) -> dict[str, object]:
    """Enqueue `count` noops, drain them with one worker, sampling its RSS every
    `settings.memory_sample_s`. Returns the samples (seconds, jobs done, MiB) and figures."""
    target.prepare()
    try:
        target.enqueue_noops(count, settings.enqueue_chunk)
        spec = target.worker(None)
        start = time.perf_counter()
        worker = WorkerProcess(label, spec.argv, spec.env)
        samples: list[tuple[float, int, float]] = []
        try:
            deadline = start + settings.memory_timeout_s
            while True:
                left = target.unfinished()
                now = time.perf_counter()
                samples.append((round(now - start, 2), count - left, rss_mib(worker.popen.pid)))
                if left == 0:
                    break
                if not worker.alive():
                    raise RuntimeError(f"worker {label} exited with {left} jobs left:\n"
                                       f"{worker.tail()}")
                if now > deadline:
                    raise TimeoutError(f"{left} jobs still unfinished after "
                                       f"{settings.memory_timeout_s:.0f} s")
                time.sleep(settings.memory_sample_s)
            elapsed = time.perf_counter() - start
        finally:
            worker.stop()
    finally:
        target.discard()
    steady = [(done, mib) for _, done, mib in samples if 0.1 * count <= done <= 0.9 * count]
    warm = steady[0][1] if steady else samples[-1][2]
    return {
        "samples": samples,
        "jobs_s": count / elapsed,
        "warm_mib": warm,
        "peak_mib": max(mib for _, _, mib in samples),
        "last_mib": samples[-1][2],
        "growth_mib_per_100k": slope([(float(d), m) for d, m in steady]) * 100_000,
    }


def run(settings: Settings) -> SuiteResult:
    result = SuiteResult()
    target = RotaTarget("sqlite")
    why = target.unavailable()
    if why:
        result.skipped[target.name] = why
        print(f"  memory {target.name}: skipped ({why})")
        return result
    count = settings.memory_jobs
    runs = [drain_sampled(target, count, settings, f"memory-sqlite-{index + 1}")
            for index in range(settings.memory_runs)]
    for index, one in enumerate(runs):
        print(f"  memory {target.name} run {index + 1}: {count:,} jobs at "
              f"{one['jobs_s']:,.0f} jobs/s; RSS warm {one['warm_mib']:.1f} MiB, peak "
              f"{one['peak_mib']:.1f}, last {one['last_mib']:.1f}; growth "
              f"{one['growth_mib_per_100k']:+.2f} MiB per 100,000 jobs", flush=True)
    note = f"{count:,} jobs, one worker, pool 20, RSS sampled every {settings.memory_sample_s:g} s"
    subject = f"{target.name} worker"
    for key, metric in (("warm_mib", "RSS at 10 % MiB"), ("peak_mib", "RSS peak MiB"),
                        ("last_mib", "RSS at end MiB"),
                        ("growth_mib_per_100k", "MiB per 100k jobs")):
        values = [float(one[key]) for one in runs]  # type: ignore[arg-type]
        result.add("memory", subject, metric, Figure.of(values, "MiB", note))
    result.add("memory", subject, "jobs/s", Figure.of(
        [float(one["jobs_s"]) for one in runs], "jobs/s", note))  # type: ignore[arg-type]
    result.detail[target.name] = {"jobs": count, "runs": [
        {k: v for k, v in one.items()} for one in runs]}
    return result
