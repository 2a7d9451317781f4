"""maintenance: the store's maintenance statements per second with 1 and 20 idle workers,
before and after the maintenance leader.

Two rota source trees side by side in one run (`benchmarks.ab`'s trees and alternation):
"before" is a base revision (default `settings.maintenance_base`, main just before the
leader election: every worker sweeps, purges and fires schedules), "after" this tree (one elected
worker does). Runs alternate before, after, after, before, ...

Everything runs on a PostgreSQL cluster of the suite's own: `pg_createcluster` on a free
port with `shared_preload_libraries=pg_stat_statements` (utility statements not tracked),
started for the suite and dropped at its end; the shared server is never reconfigured.
One run of one tree with N workers:
1. a fresh database, migrated by the tree's rota;
2. N `python -m rota.cli worker benchmarks.workers.rota_app:app` processes (one group,
   default lease 60 s so a sweep every 20 s, default retention so a purge pass a minute,
   and a schedule `tick` every `maintenance_schedule_s`), all idle: no job is enqueued;
3. once all N are in the worker registry and `maintenance_settle_s` passed,
   `pg_stat_statements_reset()`, then `maintenance_window_s` seconds, then the database's
   rows of `pg_stat_statements`, each statement put in one class by its text: sweep
   (expired leases), retention (purges), schedules (registration, listing, fires),
   election (the leader lease), other (claims and probes, the registry, policies).

Figures per tree and N: maintenance statements/s (sweep + retention + schedules), election
statements/s, both together, their server time (ms of execution per second), and every
statement of the database per second. Figures only, never pass/fail.

    python -m benchmarks run maintenance            # in benchmarks/.venv, with the table
    python -m benchmarks.suites.maintenance --window 60   # any venv with rota and psycopg
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks import cleanup
from benchmarks.ab import Tree, alternate, resolve_tree
from benchmarks.cluster import Cluster, own_cluster
from benchmarks.processes import WorkerProcess
from benchmarks.settings import Settings
from benchmarks.targets.rota_target import APP, tree_env
from benchmarks.venv import ROOT

SUITE = "maintenance"
CLASSES = ("sweep", "retention", "schedules", "election", "other")
MAINTENANCE = ("sweep", "retention", "schedules")
# Statement counts only (utility statements left out); fsync off and room for 20 workers'
# connections: this suite counts statements, it does not time commits.
CLUSTER_SETTINGS = ("shared_preload_libraries=pg_stat_statements",
                    "pg_stat_statements.track_utility=off", "max_connections=400",
                    "fsync=off")


def classify(query: str) -> str:
    """The class of a statement of rota's PostgreSQL store, by its text."""
    text = " ".join(query.lower().split())
    if ".leaders" in text:
        return "election"
    if ".schedules" in text:
        return "schedules"
    if "lease_expires_at <=" in text:
        return "sweep"  # find_expired_leases.sql, expire_lease.sql
    if ("for update skip locked" in text and "finished_at is not null" in text) or (
            text.startswith("with gone as")):
        return "retention"  # purge_lock.sql, purge.sql
    return "other"


# -- one run ---------------------------------------------------------------------------------


@dataclass
class Counts:
    window_s: float
    calls: dict[str, int] = field(default_factory=dict)
    exec_ms: dict[str, float] = field(default_factory=dict)
    top: list[tuple[str, int, str]] = field(default_factory=list)  # class, calls, text

    def per_s(self, classes: Sequence[str]) -> float:
        return sum(self.calls.get(c, 0) for c in classes) / self.window_s

    def ms_per_s(self, classes: Sequence[str]) -> float:
        return sum(self.exec_ms.get(c, 0.0) for c in classes) / self.window_s


def measure_once(cluster: Cluster, tree: Tree, workers: int, *, window_s: float,
                 settle_s: float, schedule_s: float, label: str) -> Counts:
    """One run of `tree` with `workers` idle workers (see the module docstring)."""
    database = f"maint_{label.replace('-', '_')}"
    with cluster.admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{database}"')
    url = cluster.url(database)
    env = {**os.environ, **tree_env(tree.src)}
    subprocess.run([sys.executable, "-c", "import sys; from rota.store import open_store; "
                    "s = open_store(sys.argv[1]); s.migrate(); s.close()", url],
                   cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
    procs: list[WorkerProcess] = []
    try:
        for number in range(workers):
            procs.append(WorkerProcess(
                f"{label}-{number + 1}", [sys.executable, "-m", "rota.cli", "worker", APP],
                {**tree_env(tree.src), "ROTA_BENCH_STORE": url, "ROTA_BENCH_POOL": "4",
                 "BENCH_SCHEDULE_S": f"{schedule_s:g}"}))
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            deadline = time.monotonic() + 180
            while True:
                row = conn.execute("SELECT count(*) FROM rota.workers").fetchone()
                if row is not None and row[0] >= workers:
                    break
                dead = [p for p in procs if not p.alive()]
                if dead:
                    raise RuntimeError(f"worker {dead[0].label} exited:\n{dead[0].tail()}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{row} of {workers} workers registered after 180 s")
                time.sleep(0.5)
        time.sleep(settle_s)
        with cluster.admin() as conn:
            conn.execute("SELECT pg_stat_statements_reset()")
            began = time.monotonic()
            time.sleep(window_s)
            rows = conn.execute(
                "SELECT query, calls, total_exec_time FROM pg_stat_statements "
                "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = %s)",
                (database,)).fetchall()
            elapsed = time.monotonic() - began
        dead = [p for p in procs if not p.alive()]
        if dead:
            raise RuntimeError(f"worker {dead[0].label} exited:\n{dead[0].tail()}")
    finally:
        for proc in procs:
            proc._signal(signal.SIGTERM)  # every one first: they stop side by side
        for proc in procs:
            proc.stop()
        with cluster.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    counts = Counts(elapsed)
    for query, calls, exec_ms in rows:
        kind = classify(query)
        counts.calls[kind] = counts.calls.get(kind, 0) + int(calls)
        counts.exec_ms[kind] = counts.exec_ms.get(kind, 0.0) + float(exec_ms)
        counts.top.append((kind, int(calls), " ".join(query.split())[:70]))
    counts.top.sort(key=lambda item: -item[1])
    return counts


# -- the suite --------------------------------------------------------------------------------

METRICS = (
    ("maintenance stmt/s", lambda c: c.per_s(MAINTENANCE), "stmt/s"),
    ("election stmt/s", lambda c: c.per_s(("election",)), "stmt/s"),
    ("maint.+election stmt/s", lambda c: c.per_s((*MAINTENANCE, "election")), "stmt/s"),
    ("maint.+election ms/s", lambda c: c.ms_per_s((*MAINTENANCE, "election")), "ms/s"),
    ("all stmt/s", lambda c: c.per_s(CLASSES), "stmt/s"),
)


def measure_all(base: str, worker_counts: Sequence[int], runs: int, window_s: float,
                settle_s: float, schedule_s: float) -> dict[str, list[Counts]]:
    """Counts by subject ("before 20 workers", ...), `runs` each, trees alternating."""
    trees = [resolve_tree("before", base), Tree("after", ROOT / "src")]
    got: dict[str, list[Counts]] = {}
    with own_cluster("rota_maint", CLUSTER_SETTINGS) as cluster:
        print(f"  cluster {cluster.name} (PostgreSQL {cluster.version}) on port "
              f"{cluster.port}", flush=True)
        for workers in worker_counts:
            def measure(tree: Tree, run_index: int, workers: int = workers) -> None:
                subject = f"{tree.label} ({base if tree.label == 'before' else 'this tree'}), " \
                          f"{workers} worker{'s' if workers > 1 else ''}"
                counts = measure_once(
                    cluster, tree, workers, window_s=window_s, settle_s=settle_s,
                    schedule_s=schedule_s, label=f"{tree.label}-{workers}-{run_index + 1}")
                got.setdefault(subject, []).append(counts)
                by_class = ", ".join(f"{k} {counts.calls.get(k, 0) / counts.window_s:.2f}"
                                     for k in CLASSES)
                print(f"  {subject} run {run_index + 1}: {by_class} stmt/s; maintenance+"
                      f"election {counts.ms_per_s((*MAINTENANCE, 'election')):.3f} ms/s",
                      flush=True)
                for kind, calls, text in counts.top:
                    if kind != "other":
                        print(f"      {kind:<9} {calls:>6}  {text}", flush=True)

            alternate(trees, runs, measure)
    return got


def table(got: dict[str, list[Counts]]) -> str:
    import statistics

    head = f"{'subject':<38}" + "".join(f"{name:>24}" for name, _, _ in METRICS)
    lines = [head, "-" * len(head)]
    for subject, runs in got.items():
        cells = "".join(f"{statistics.median(f(c) for c in runs):>24.3f}"
                        for _, f, _ in METRICS)
        lines.append(f"{subject:<38}{cells}")
    return "\n".join(lines)


def run(settings: Any) -> Any:
    """The `maintenance` suite of `python -m benchmarks run` (run only when named)."""
    from benchmarks.results import Figure, SuiteResult

    result = SuiteResult()
    try:
        got = measure_all(settings.maintenance_base, settings.maintenance_workers,
                          settings.maintenance_runs, settings.maintenance_window_s,
                          settings.maintenance_settle_s, settings.maintenance_schedule_s)
    except (OSError, RuntimeError, SystemExit) as error:
        result.skipped[SUITE] = str(error)
        print(f"  maintenance: skipped ({error})")
        return result
    note = (f"idle workers, {settings.maintenance_window_s:g} s window, schedule every "
            f"{settings.maintenance_schedule_s:g} s")
    for subject, runs in got.items():
        for metric, value, unit in METRICS:
            result.add(SUITE, subject, metric, Figure.of([value(c) for c in runs], unit, note))
    print(table(got), flush=True)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.suites.maintenance",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=Settings().maintenance_base,
                        help="the 'before' tree or revision (default: main just before "
                             "the maintenance leader)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 20])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--window", type=float, default=60.0, help="seconds counted")
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--schedule", type=float, default=10.0,
                        help="seconds between two instants of the schedule")
    args = parser.parse_args(argv)
    cleanup.install()
    try:
        got = measure_all(args.base, args.workers, args.runs, args.window, args.settle,
                          args.schedule)
    finally:
        cleanup.run_all()
    print(table(got))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
