"""`python3 -m benchmarks profile`: where a rota worker's time goes during a drain.

Enqueues N noop jobs, starts `rota worker` as the drain suite does, attaches py-spy to it
(all threads, 200 samples/s, so the store threads are seen too) and drains. py-spy's
collapsed stacks are then summed: top functions by own time and by inclusive time, time by
area (store SQL, driver, runtime, asyncio, ...), and the inclusive share of dispatch
planning (`rota/core/dispatch/`). Writes benchmarks/results/profile-<store>.json and the
raw stacks beside it.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path

from benchmarks import cleanup, report
from benchmarks.processes import WorkerProcess, wait_drained
from benchmarks.targets.rota_target import RotaTarget

FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:()]*)(?::\d+)?\)$")

# Areas, first match wins, tested against "file function".
AREAS = (
    ("dispatch planning (rota/core/dispatch/)", "rota/core/dispatch/"),
    ("rota store (rota/store/)", "rota/store/"),
    ("rota worker runtime (rota/worker/)", "rota/worker/"),
    ("rota core other (rota/core/)", "rota/core/"),
    ("psycopg / pool", "psycopg"),
    ("sqlite3", "sqlite3"),
    ("json", "json/"),
    ("asyncio", "asyncio/"),
    ("threading / queue", "threading.py"),
    ("concurrent.futures", "concurrent/futures"),
    ("benchmark handlers", "benchmarks/"),
)


def _frames(stack: str) -> list[tuple[str, str]]:
    frames = []
    for raw in stack.split(";"):
        match = FRAME.match(raw.strip())
        if match:
            frames.append((match["func"], match["file"]))
    return frames


def summarise(raw_text: str, top: int = 15) -> dict[str, object]:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    areas: Counter[str] = Counter()
    total = 0
    for line in raw_text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = _frames(stack)
        if not frames:
            continue
        total += count
        leaf_func, leaf_file = frames[-1]
        own[f"{leaf_func} ({_short(leaf_file)})"] += count
        for name in {f"{func} ({_short(file)})" for func, file in frames}:
            inclusive[name] += count
        seen: set[str] = set()
        for _func, file in frames:
            for area, needle in AREAS:
                if needle in file and area not in seen:
                    seen.add(area)
                    areas[area] += count
                    break
    share = {k: round(100 * v / total, 2) for k, v in areas.most_common()} if total else {}
    return {
        "samples": total,
        "area_inclusive_percent": share,
        "top_own_percent": {k: round(100 * v / total, 2) for k, v in own.most_common(top)},
        "top_inclusive_percent": {k: round(100 * v / total, 2)
                                  for k, v in inclusive.most_common(top)},
        "dispatch_planning_percent": share.get(AREAS[0][0], 0.0),
    }


def _short(file: str) -> str:
    for marker in ("site-packages/", "src/", "python3.11/"):
        if marker in file:
            return file.split(marker, 1)[1]
    return file


def profile(kind: str, jobs: int, rate: int = 200) -> dict[str, object]:
    target = RotaTarget(kind)
    why = target.unavailable()
    if why:
        raise SystemExit(f"cannot profile {target.name}: {why}")
    raw = report.RESULTS / f"profile-{kind}.txt"
    raw.parent.mkdir(parents=True, exist_ok=True)
    py_spy = str(Path(sys.executable).with_name("py-spy"))
    target.prepare()
    try:
        target.enqueue_noops(jobs, 5_000)
        spec = target.worker(None)
        start = time.perf_counter()
        worker = WorkerProcess(f"profile-{kind}", spec.argv, spec.env)
        spy = WorkerProcess(f"profile-{kind}-py-spy", [
            py_spy, "record", "--pid", str(worker.popen.pid), "--threads", "--format", "raw",
            "--rate", str(rate), "--output", str(raw)])
        try:
            end = wait_drained(target.unfinished, [worker], 600, 0.1)
        finally:
            worker.stop()
            try:
                spy.popen.wait(30)
            finally:
                spy.stop()
    finally:
        target.discard()
    summary = summarise(raw.read_text() if raw.exists() else "")
    summary.update(store=kind, jobs=jobs, jobs_per_s_under_profiler=round(jobs / (end - start)),
                   raw_stacks=str(raw))
    return summary


def main(args: argparse.Namespace) -> int:
    cleanup.install()
    try:
        summary = profile(args.store, args.jobs)
    finally:
        cleanup.run_all()
    report.write_json(report.RESULTS / f"profile-{args.store}.json", summary)
    print(f"rota[{args.store}] drain of {args.jobs:,} jobs under py-spy: "
          f"{summary['jobs_per_s_under_profiler']:,} jobs/s, {summary['samples']} samples")
    for title in ("area_inclusive_percent", "top_own_percent", "top_inclusive_percent"):
        print(f"\n{title.replace('_', ' ')}:")
        for name, percent in summary[title].items():  # type: ignore[attr-defined]
            print(f"  {percent:6.2f}  {name}")
    print(f"\ndispatch planning (rota/core/dispatch/), inclusive: "
          f"{summary['dispatch_planning_percent']} % of sampled worker time")
    print(f"wrote {report.RESULTS / f'profile-{args.store}.json'}")
    return 0
