"""Instructions per job of a real `rota worker` drain, from two (or more) rota source trees.

    python3 -m benchmarks.callgrind_drain --trees /tmp/base . [--stores sqlite postgres] \
        [--small 1000] [--large 4000] [--runs 1] [--calls]

Wall-clock and CPU figures swing +-10-25 % on a shared machine; instruction counts do not.
Each tree drains `--small` and then `--large` noop jobs exactly as `ab_drain.drain_once`
does (a fresh store, one `rota worker`, one Strict group, pool 20), but the worker runs
under `valgrind --tool=callgrind`, which counts the instructions it executes (every
thread; the database server's are not counted). Two sizes separate the fixed part
(interpreter start, imports, start and stop) from the part per job: per job =
(Ir(large) - Ir(small)) / (large - small).

`--calls` runs the worker under a Python profile hook instead (every thread) and prints,
per tree, the Python functions called per job (same slope), and then the functions whose
calls per job differ between the first tree and each other one: where per-job work was
added or removed. Call counts, not time: read them with the instruction counts.

The worker runs ~50x slower under valgrind, so time-driven batching (the outcome writer's
10 ms linger, how many jobs a claim finds free) can differ from a native run; figures,
never pass/fail.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.ab_drain import DEFAULT_PG, ENQUEUE, _env, fresh_store

APP = "benchmarks.workers.rota_app:app"
# Runs `rota worker` with a profile hook on every thread counting calls per Python
# function; writes them as JSON to the file named by argv[1] at exit.
COUNTING = """
import atexit, collections, json, sys, threading
calls = collections.Counter()
def hook(frame, event, arg):
    if event == "call":
        code = frame.f_code
        calls[(code.co_filename, code.co_qualname)] += 1
    elif event == "c_call":
        calls[("C", getattr(arg, "__qualname__", repr(arg)))] += 1
sys.setprofile(hook)
threading.setprofile(hook)
def dump():
    sys.setprofile(None)
    with open(sys.argv[1], "w") as out:
        json.dump([[f, name, n] for (f, name), n in calls.items()], out)
atexit.register(dump)
from rota.cli import main
sys.exit(main(["worker", {app!r}]))
"""
TOTALS = re.compile(r"^(?:totals|summary):\s*(\d+)", re.MULTILINE)


def run_worker(tree: Path, kind: str, jobs: int, pg_url: str, calls: bool,
               keep: Path | None = None) -> object:
    """Drain `jobs` noops with one worker of `tree` under callgrind (the instruction
    count) or the counting hook (the calls per function)."""
    with fresh_store(kind, pg_url) as (url, unfinished), \
            tempfile.TemporaryDirectory() as folder:
        env = _env(tree, url)
        subprocess.run([sys.executable, "-c", ENQUEUE.format(url=url, jobs=jobs)],
                       cwd=tree, env=env, check=True)
        out = Path(folder) / "out"
        if calls:
            command = [sys.executable, "-c", COUNTING.format(app=APP), str(out)]
        else:
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                       sys.executable, "-m", "rota.cli", "worker", APP]
        worker = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE)
        try:
            while unfinished() > 0:
                if worker.poll() is not None:
                    raise RuntimeError(f"the worker of {tree} exited: "
                                       f"{worker.stderr.read().decode() if worker.stderr else ''}")
                time.sleep(0.2)
        finally:
            worker.terminate()
            worker.communicate()
        text = out.read_text()
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            suffix = "calls" if calls else "callgrind"
            (keep / f"{tree.name}-{kind}-{jobs}.{suffix}").write_text(text)
        if calls:
            return {f"{Path(f).name} {name}": n for f, name, n in json.loads(text)}
        match = TOTALS.search(text)
        if match is None:
            raise RuntimeError(f"no instruction total in callgrind's output of {tree}")
        return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=Path, nargs="+", required=True)
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres"],
                        choices=["sqlite", "postgres"])
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=4_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--calls", action="store_true",
                        help="count Python calls per function instead of instructions")
    parser.add_argument("--top", type=int, default=40, help="--calls: rows of the diff")
    parser.add_argument("--keep", type=Path, help="a folder to keep the raw outputs in")
    parser.add_argument("--pg-url", default=DEFAULT_PG)
    options = parser.parse_args()
    trees = [tree.resolve() for tree in options.trees]
    sizes = (options.small, options.large)
    span = options.large - options.small
    for kind in options.stores:
        if options.calls:
            per_job: dict[Path, dict[str, float]] = {}
            for tree in trees:
                small, large = (run_worker(tree, kind, n, options.pg_url, True, options.keep)
                                for n in sizes)
                assert isinstance(small, dict) and isinstance(large, dict)
                per_job[tree] = {k: (large.get(k, 0) - small.get(k, 0)) / span
                                 for k in set(small) | set(large)}
                print(f"{kind:8} {tree}: {sum(per_job[tree].values()):.1f} Python calls "
                      f"per job", flush=True)
            first = per_job[trees[0]]
            for tree in trees[1:]:
                other = per_job[tree]
                diffs = sorted(((other.get(k, 0.0) - first.get(k, 0.0), k)
                                for k in set(first) | set(other)),
                               key=lambda d: -abs(d[0]))
                print(f"{kind:8} calls per job, {tree} minus {trees[0]}:")
                for diff, key in diffs[:options.top]:
                    if abs(diff) >= 0.01:
                        print(f"  {diff:+8.2f}  {key}")
            continue
        counts: dict[tuple[Path, int], list[int]] = {(t, n): [] for t in trees for n in sizes}
        for run in range(options.runs):
            for jobs in sizes:
                for tree in trees if run % 2 == 0 else trees[::-1]:
                    ir = run_worker(tree, kind, jobs, options.pg_url, False, options.keep)
                    assert isinstance(ir, int)
                    counts[(tree, jobs)].append(ir)
                    print(f"{kind:8} {tree} {jobs:,} jobs: {ir:,} instructions", flush=True)
        for tree in trees:
            small, large = (statistics.median(counts[(tree, n)]) for n in sizes)
            per = (large - small) / span
            print(f"{kind:8} {tree}: per job {per:,.0f} instructions, fixed "
                  f"{(small - per * options.small) / 1e6:,.0f} M", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
