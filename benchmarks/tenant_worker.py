"""A real `rota worker` process draining tenant Queues: one Weighted group over 10,000
Queues against the same worker over one Queue, alternating (issue 13).

    python3 -m benchmarks.tenant_worker [--stores sqlite postgres] [--jobs 20000] \
        [--runs 2] [--configs 1/1 10000/100 10000/10000]

Each run enqueues `--jobs` argument-less async noop jobs round-robin over the backlogged
Queues (`Q/B`: B of Q Queues backlogged, spread evenly; weights 1-5 by Queue number, as in
`benchmarks.suites.queues`) into a fresh store, starts `rota worker
benchmarks.workers.rota_app:app` with `ROTA_BENCH_POLICY=tenants:Q` (one Weighted group,
pool 20), and times it from the start of the process until the store holds no unfinished
job (polled every 50 ms from this process). Every configuration runs right after a
1-Queue run of the same store and job count (the pair alternating their order), and is
reported as the ratio of the medians. The process's start (imports, validating 10,000
Queue names, the first pass's survey of every Queue) is inside the time: measured
separately below as the worker's CPU per job. Figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.ab_drain import DEFAULT_PG, fresh_store

ROOT = Path(__file__).resolve().parent.parent
ENQUEUE = """
from datetime import UTC, datetime
from rota.core.jobs import NewJob
from benchmarks.workers.rota_app import make_app, tenant_queue
app = make_app({url!r}, "tenants:{queues}")
step = {queues} // {backlogged}
names = [tenant_queue(i) for i in range(0, {queues}, step)][:{backlogged}]
now = datetime.now(UTC)
jobs = [NewJob(name="noop", queue=names[i % len(names)], due_at=now) for i in range({jobs})]
for start in range(0, len(jobs), 5000):
    app.store.enqueue(jobs[start:start + 5000], now)
app.close()
"""


def _env(url: str, queues: int) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
            "ROTA_BENCH_STORE": url, "ROTA_BENCH_POLICY": f"tenants:{queues}",
            "PYTHONDONTWRITEBYTECODE": "1"}


def drain_once(kind: str, queues: int, backlogged: int, jobs: int,
               pg_url: str) -> tuple[float, float]:
    """Jobs per second, and the worker's CPU microseconds per job."""
    with fresh_store(kind, pg_url) as (url, unfinished):
        script = ENQUEUE.format(url=url, queues=queues, backlogged=backlogged, jobs=jobs)
        subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=_env(url, queues),
                       check=True)
        began = time.monotonic()
        worker = subprocess.Popen(
            [sys.executable, "-m", "rota.cli", "worker", "benchmarks.workers.rota_app:app"],
            cwd=ROOT, env=_env(url, queues), stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        try:
            while unfinished() > 0:
                if worker.poll() is not None:
                    error = worker.stderr.read().decode() if worker.stderr else ""
                    raise RuntimeError(f"the worker exited: {error}")
                time.sleep(0.05)
            took_s = time.monotonic() - began
        finally:
            worker.terminate()
            _, _, usage = os.wait4(worker.pid, 0)
        return jobs / took_s, (usage.ru_utime + usage.ru_stime) * 1e6 / jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres"],
                        choices=["sqlite", "postgres"])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--configs", nargs="+", default=["10000/100", "10000/10000"],
                        help="Queues/backlogged, each against 1/1")
    parser.add_argument("--pg-url", default=DEFAULT_PG)
    options = parser.parse_args()
    for kind in options.stores:
        for config in options.configs:
            queues, backlogged = (int(part) for part in config.split("/"))
            figures: dict[str, list[tuple[float, float]]] = {"1/1": [], config: []}
            for run in range(options.runs):
                order = [("1/1", 1, 1), (config, queues, backlogged)]
                for label, count, busy in order if run % 2 == 0 else order[::-1]:
                    rate, cpu = drain_once(kind, count, busy, options.jobs, options.pg_url)
                    figures[label].append((rate, cpu))
                    print(f"{kind:8} run {run + 1} {label:>12} Queues: {rate:8,.0f} jobs/s, "
                          f"worker CPU {cpu:6.1f} us/job", flush=True)
            one, many = (statistics.median(rate for rate, _ in figures[k])
                         for k in ("1/1", config))
            cpu_one, cpu_many = (statistics.median(cpu for _, cpu in figures[k])
                                 for k in ("1/1", config))
            print(f"{kind:8} MEDIAN {config} Queues {many:,.0f} jobs/s ({cpu_many:.1f} us/job "
                  f"CPU), 1 Queue {one:,.0f} jobs/s ({cpu_one:.1f} us/job CPU): "
                  f"ratio {many / one:.0%}", flush=True)


if __name__ == "__main__":
    main()
