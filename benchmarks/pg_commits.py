"""Commits and round trips per job of a PostgreSQL drain, for one or more rota source trees.

    python3 -m benchmarks.pg_commits --trees /tmp/base . [--jobs 20000] [--runs 2]

Each run enqueues `--jobs` argument-less async noop jobs into a new PostgreSQL database
with the tree's own rota, then starts one `rota worker benchmarks.workers.rota_app:app`
from that tree (one Worker Group, Strict, pool 20: the drain suite's worker) and lets it
drain the backlog. Counted:

- **commits**: `pg_stat_database.xact_commit` of the run's own database, after the worker
  exited, less the value before it started and less the transactions of this script's
  own unfinished-job poll (one per poll). Everything the worker committed is in it
  (start-up, the worker registry, heartbeats), not only claims and outcomes.
- **statements** and **round trips**, counted in the worker process by wrapping libpq's
  send calls (psycopg's pure-Python libpq binding, `PSYCOPG_IMPL=python`, so that its
  methods can be wrapped): a statement is a query sent (BEGIN and COMMIT included); a
  round trip is a statement or a Prepare sent outside pipeline mode, or a pipeline sync,
  or a flush request that does not follow a sync (the client then waits for the
  server).

The worker runs slower under the wrapper and the pure-Python binding: this script counts,
it does not time (benchmarks/ab_drain.py times).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.ab_drain import DEFAULT_PG, ENQUEUE, _env, fresh_store, wait_drained

# Run as the worker: count libpq sends, then run `rota worker` as usual; the counts are
# written to $PG_COMMITS_OUT when the worker exits (SIGTERM is a graceful stop).
WORKER = """
import atexit, json, os, sys
from psycopg import pq
counts = {"statements": 0, "round_trips": 0}
PGconn = pq.PGconn
OFF = pq.PipelineStatus.OFF

synced = set()  # connections whose last call was a pipeline sync

def wrap(name, statement, kind):
    original = getattr(PGconn, name)
    def counted(self, *args, **kwargs):
        if statement:
            counts["statements"] += 1
        if kind == "sync" or (kind == "send" and self.pipeline_status == OFF):
            counts["round_trips"] += 1
        elif kind == "flush" and id(self) not in synced:
            counts["round_trips"] += 1  # results asked for mid-pipeline: a wait
        (synced.add if kind == "sync" else synced.discard)(id(self))
        return original(self, *args, **kwargs)
    setattr(PGconn, name, counted)

for name in ("send_query", "send_query_params", "send_query_prepared", "exec_",
             "exec_params", "exec_prepared"):
    wrap(name, True, "send")
for name in ("send_prepare", "prepare", "send_describe_prepared", "send_describe_portal"):
    wrap(name, False, "send")
wrap("pipeline_sync", False, "sync")
wrap("send_flush_request", False, "flush")

def dump():
    with open(os.environ["PG_COMMITS_OUT"], "w") as out:
        json.dump(counts, out)
atexit.register(dump)
from rota.cli import main
sys.argv = ["rota", "worker", "benchmarks.workers.rota_app:app"]
main()
"""

XACT = "SELECT xact_commit FROM pg_stat_database WHERE datname = %s"


def _commits(admin_url: str, database: str) -> int:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as admin:
        row = admin.execute(XACT, (database,)).fetchone()
        return int(row[0]) if row else 0


def count_once(tree: Path, jobs: int, pg_url: str) -> dict[str, float]:
    """Commits, statements and round trips per job of one drain from `tree`."""
    with fresh_store("postgres", pg_url) as (url, unfinished), \
            tempfile.TemporaryDirectory() as folder:
        database = url.rsplit("/", 1)[1]
        env = _env(tree, url)
        subprocess.run([sys.executable, "-c", ENQUEUE.format(url=url, jobs=jobs)],
                       cwd=tree, env=env, check=True)
        out = Path(folder) / "counts.json"
        env = {**env, "PSYCOPG_IMPL": "python", "PG_COMMITS_OUT": str(out)}
        time.sleep(0.6)  # the enqueuer's statistics reach pg_stat_database
        before = _commits(pg_url, database)
        began = time.monotonic()
        worker = subprocess.Popen([sys.executable, "-c", WORKER], cwd=tree, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            polls = wait_drained(worker, unfinished, tree)
            took_s = time.monotonic() - began
        finally:
            worker.terminate()
            worker.wait()
        time.sleep(0.6)  # backends flush their statistics at exit; let them land
        commits = _commits(pg_url, database) - before - polls
        counted = json.loads(out.read_text())
        return {
            "commits": commits / jobs,
            "statements": counted["statements"] / jobs,
            "round_trips": counted["round_trips"] / jobs,
            "seconds": took_s,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=Path, nargs="+", required=True,
                        help="rota source trees")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=2, help="runs per tree (alternating)")
    parser.add_argument("--pg-url", default=DEFAULT_PG)
    options = parser.parse_args()
    trees = [tree.resolve() for tree in options.trees]
    figures: dict[Path, list[dict[str, float]]] = {tree: [] for tree in trees}
    for run in range(options.runs):
        for tree in trees if run % 2 == 0 else trees[::-1]:
            counted = count_once(tree, options.jobs, options.pg_url)
            figures[tree].append(counted)
            print(f"run {run + 1} {tree}: {counted['commits']:.4f} commits/job, "
                  f"{counted['statements']:.4f} statements/job, "
                  f"{counted['round_trips']:.4f} round trips/job "
                  f"({options.jobs:,} jobs in {counted['seconds']:.1f} s, counting)",
                  flush=True)
    for tree in trees:
        runs = figures[tree]
        print(f"MEDIAN {tree}: "
              + ", ".join(f"{statistics.median(r[key] for r in runs):.4f} {key}/job"
                          for key in ("commits", "statements", "round_trips")), flush=True)


if __name__ == "__main__":
    main()
