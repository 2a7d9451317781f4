"""`python -m benchmarks run [--suite S] [--quick] [--runs N]`: run suites, print the table,
write benchmarks/results/latest.json. Runs inside benchmarks/.venv (see venv.py)."""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable
from datetime import UTC, datetime

from benchmarks import cleanup, report, versions
from benchmarks.results import SuiteResult
from benchmarks.settings import Settings, quick
from benchmarks.targets.base import Target
from benchmarks.targets.pgqueuer_target import PgqueuerTarget
from benchmarks.targets.procrastinate_target import ProcrastinateTarget
from benchmarks.targets.rota_target import RotaTarget

SUITES = ("drain", "enqueue", "latency", "ceiling", "fairness", "memory", "pickup")
# Run only when named (`--suite queues`): rota alone, ~15 minutes with PostgreSQL.
# `--suite scale` (table size, ~30 minutes with 10,000,000 rows) likewise.
EXTRA_SUITES = ("queues", "scale")


def _targets() -> list[Target]:
    return [RotaTarget("postgres"), RotaTarget("sqlite"), PgqueuerTarget(),
            ProcrastinateTarget()]


Runner = Callable[[list[Target], Settings, dict[str, SuiteResult]], SuiteResult]


def _suite_runner(name: str) -> Runner:
    if name == "drain":
        from benchmarks.suites import drain
        return lambda targets, settings, _done: drain.run(targets, settings)
    if name == "enqueue":
        from benchmarks.suites import enqueue

        def enqueue_rest(targets: list[Target], settings: Settings,
                         done: dict[str, SuiteResult]) -> SuiteResult:
            # Subjects the drain suite measured already have their enqueue rows.
            drained = done.get("drain")
            measured = frozenset(r.subject for r in drained.rows if r.suite == "enqueue"
                                 ) if drained else frozenset()
            return enqueue.run(targets, settings, measured)

        return enqueue_rest
    if name == "latency":
        from benchmarks.suites import latency
        return lambda targets, settings, _done: latency.run(targets, settings)
    if name == "ceiling":
        from benchmarks.suites import ceiling
        return lambda _targets, settings, _done: ceiling.run(settings)
    if name == "memory":
        from benchmarks.suites import memory
        return lambda _targets, settings, _done: memory.run(settings)
    if name == "queues":
        from benchmarks.suites import queues
        return lambda _targets, settings, _done: queues.run(settings)
    if name == "scale":
        from benchmarks.suites import scale
        return lambda _targets, settings, _done: scale.run(settings, settings.scale_rows)
    if name == "pickup":
        from benchmarks.suites import pickup
        return lambda _targets, settings, _done: pickup.run(settings)
    from benchmarks.suites import fairness
    return lambda _targets, settings, _done: fairness.run(settings)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run benchmark suites")
    run.add_argument("--suite", choices=("all", *SUITES, *EXTRA_SUITES), default="all")
    run.add_argument("--quick", action="store_true", help="smoke run with small counts")
    run.add_argument("--runs", type=int, default=3, help="runs per figure (default 3)")
    run.add_argument("--only", action="append", default=[],
                     help="measure only this subject (repeatable), e.g. pgqueuer")
    run.add_argument("--pickup-base", metavar="REV", default=None,
                     help="git revision the pickup suite measures as 'before' "
                          f"(default {Settings().pickup_base})")
    run.add_argument("--rows", type=int, nargs="+", default=None, metavar="N",
                     help="table sizes of the scale suite "
                          f"(default {' '.join(map(str, Settings().scale_rows))})")
    commands.add_parser("profile", help="py-spy profile of a rota drain (--store, --jobs)")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    if argv[:1] == ["profile"]:
        from benchmarks import profiling

        return profiling.main(argv[1:])
    args = parse(argv)
    if args.runs < 1:
        print("--runs must be at least 1")
        return 2
    cleanup.install()
    settings = quick(args.runs) if args.quick else Settings(runs=args.runs)
    if args.pickup_base:
        settings = dataclasses.replace(settings, pickup_base=args.pickup_base)
    if args.rows:
        settings = dataclasses.replace(settings, scale_rows=tuple(args.rows))
    suites = list(SUITES) if args.suite == "all" else [args.suite]
    targets = [t for t in _targets() if not args.only or t.name in args.only]
    started = time.perf_counter()
    info = versions.collect()
    print(f"rota benchmarks: suites {', '.join(suites)}; {settings.runs} run(s) per figure"
          f"{' (quick)' if args.quick else ''}")
    print(f"python {info['python']}, PostgreSQL {info['postgresql']}, "
          f"rota {str(info['rota_git_sha'])[:12]}, {info['packages']}", flush=True)
    results: dict[str, SuiteResult] = {}
    try:
        for suite in suites:
            print(f"\n== {suite}", flush=True)
            suite_started = time.perf_counter()
            results[suite] = _suite_runner(suite)(targets, settings, results)
            print(f"   ({time.perf_counter() - suite_started:.0f} s)", flush=True)
    finally:
        cleanup.run_all()
        rows, skipped, detail = report.merge(results, SUITES + EXTRA_SUITES)
        elapsed = time.perf_counter() - started
        print(f"\n{report.table(rows)}")
        for what, why in skipped.items():
            print(f"skipped {what}: {why}")
        print(f"\ntotal {elapsed:.0f} s")
        report.write_json(report.RESULTS / "latest.json", {
            "finished_at": datetime.now(UTC).isoformat(),
            "command": ["python3", "-m", "benchmarks", *argv],
            "elapsed_s": round(elapsed, 1),
            "complete": set(results) == set(suites),
            "versions": info,
            "settings": settings.as_json(),
            "workers": {t.name: t.concurrency_note for t in targets},
            "rows": [row.as_json() for row in rows],
            "skipped": skipped,
            "detail": detail,
        })
        print(f"wrote {report.RESULTS / 'latest.json'}")
    return 0
