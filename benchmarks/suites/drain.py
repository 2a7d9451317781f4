"""drain: N noop jobs enqueued first, then ONE worker process started; timed from the
worker's spawn until the store shows 0 unfinished jobs -> jobs/s.

The worker's start-up (interpreter, imports, connecting) is inside the timing, for every
library alike. The bulk enqueue before it is timed too and gives the enqueue suite's rows.
"""

from __future__ import annotations

import time

from benchmarks.processes import WorkerProcess, wait_drained
from benchmarks.results import Figure, SuiteResult
from benchmarks.settings import Settings
from benchmarks.targets import Target, available, run_label


def drain_once(
    target: Target, count: int, settings: Settings, label: str
) -> tuple[float, float, float]:
    """One run: return (drain jobs/s, bulk enqueue rows/s, seconds until the first job
    was seen finished: the worker's start-up, within the poll interval)."""
    target.prepare()
    try:
        enqueue_s = target.enqueue_noops(count, settings.enqueue_chunk)
        target.settle()
        stored = target.unfinished()
        if stored != count:
            print(f"    warning: {target.name} stored {stored} of {count} jobs")
        spec = target.worker(None)
        start = time.perf_counter()
        worker = WorkerProcess(label, spec.argv, spec.env)
        try:
            first = wait_drained(target.unfinished, [worker], settings.drain_timeout_s,
                                 settings.poll_interval_s / 5, below=count)
            end = wait_drained(target.unfinished, [worker], settings.drain_timeout_s,
                               settings.poll_interval_s)
        finally:
            worker.stop()
        return count / (end - start), count / enqueue_s, first - start
    finally:
        target.discard()


def run(targets: list[Target], settings: Settings) -> SuiteResult:
    result = SuiteResult()
    for target in available(targets, "drain", result):
        count = settings.drain_count(target.name)
        drains: list[float] = []
        enqueues: list[float] = []
        startups: list[float] = []
        for run_index in range(settings.runs):
            jobs_s, rows_s, startup_s = drain_once(target, count, settings,
                                                   run_label("drain", target, run_index))
            drains.append(jobs_s)
            enqueues.append(rows_s)
            startups.append(startup_s)
            print(f"  drain {target.name} run {run_index + 1}: {count:,} jobs, "
                  f"{jobs_s:,.0f} jobs/s, first job done after {startup_s:.2f} s "
                  f"(enqueued at {rows_s:,.0f} rows/s)", flush=True)
        note = f"{count:,} jobs"
        result.detail[target.name] = {"jobs": count, "first_job_done_s": startups}
        result.add("drain", target.name, "jobs/s", Figure.of(drains, "jobs/s", note))
        result.add("enqueue", target.name, "rows/s", Figure.of(
            enqueues, "rows/s", f"{count:,} rows, {settings.enqueue_chunk:,} per call"))
    return result
