"""`python3 -m benchmarks COMMAND ...`: every measurement of rota, one command.

    run        the suites: rota against its peers, and rota alone (benchmarks/suites/)
    ab         two or more rota source trees side by side, runs alternating (ab.py)
    peers      the peer comparison of docs/images/peers.json and peers.png
    profile    py-spy over a rota worker's drain (profiling.py)
    chart      plots from figures already measured (chart.py)
    statement  variants of one PostgreSQL statement, interleaved call by call (statement.py)

Figures only, never pass/fail. The commands run inside benchmarks/.venv (venv.py); this
module imports only the standard library until a command runs, so `--help` and argument
errors need no virtualenv.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.settings import Settings, quick
from benchmarks.venv import ROOT

SUITES = ("drain", "enqueue", "latency", "ceiling", "weights", "memory", "pickup")
# Run only when named: `fairness` (noisy neighbour, ~10 minutes on both stores), and rota
# alone: `queues` (~15 minutes with PostgreSQL), `scale` (table size, ~30 minutes with
# 10,000,000 rows), `dashboard`, `schedules`, `maintenance` (1 and 20 idle workers before
# and after the maintenance leader, ~6 minutes), `soak` (a steady load while the xmin
# horizon is held, rota against its peers; 130 minutes a system, --quick 10), `families`
# (a Queue family of 100,000 members against one Queue, ~15 minutes on both stores).
EXTRA_SUITES = ("fairness", "queues", "scale", "dashboard", "schedules", "maintenance",
                "soak", "families")
STORES = ("sqlite", "postgres")
PEERS_JSON = ROOT / "docs" / "images" / "peers.json"


def _command(commands: Any, name: str, summary: str, description: str
             ) -> argparse.ArgumentParser:
    return commands.add_parser(name, help=summary, description=description,
                               formatter_class=argparse.RawDescriptionHelpFormatter)


def _add_counts(parser: argparse.ArgumentParser, runs: int = 3) -> None:
    parser.add_argument("--quick", action="store_true", help="smoke run with small counts")
    parser.add_argument("--runs", type=int, default=runs, help=f"runs per figure (default {runs})")


def _add_run(commands: Any) -> None:
    run = _command(commands, "run", "run benchmark suites", """\
Measures the suites and prints one table; writes benchmarks/results/latest.json.
drain (jobs/s of one worker process emptying a backlog), enqueue (bulk rows/s), latency
(enqueue-to-handler pickup, p50/p99/max), ceiling (raw SQL claim + ack rows/s), weights
(Weighted 6:3:1 against random weighted: shares, window deviation, gaps), memory (a
worker's RSS over a long drain), pickup (SQLite pickup across processes, before and
after); run only when named: fairness (one heavy tenant beside 99 light ones under five
scheduling models: light tenants' waits, shares over 1,000-job windows; writes
docs/images/fairness.json), queues (1 to 10,000 tenant Queues), scale (table size),
dashboard (each page's cost on a big store), schedules (next-fire computation, a fire
beside an enqueue), maintenance (the store's maintenance statements per second with 1 and
20 idle workers, main against this tree, on a PostgreSQL cluster of its own), soak (jobs
offered at a steady rate while another client holds back the xmin horizon in three ways,
rota, rota with 3 worker processes, procrastinate and pgqueuer one after another on a
PostgreSQL cluster of its own with stock settings; writes benchmarks/results/soak.json and
docs/images/soak/*.png), families (a Weighted Queue family of 100,000 members, 1,000 with
work, against the same jobs on one Queue: drain jobs/s, new-member pickup, the worker's
peak RSS, the rows one pass reads on PostgreSQL; writes benchmarks/results/families.json
and families.md). The suite may be given as `run SUITE` or `run --suite SUITE`.""")
    run.add_argument("suite_name", nargs="?", choices=(*SUITES, *EXTRA_SUITES),
                     metavar="SUITE", help="the suite to run (the same as --suite)")
    run.add_argument("--suite", choices=("all", *SUITES, *EXTRA_SUITES), default="all")
    run.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES),
                     help="fairness, families: the stores measured (default both)")
    run.add_argument("--heavy", type=int, default=None, metavar="N",
                     help="fairness: the heavy tenant's burst (default "
                          f"{Settings().fairness_heavy_jobs:,}; --quick 5,000)")
    run.add_argument("--period-ms", type=float, default=None, metavar="MS",
                     help="fairness: each light tenant enqueues one job every MS ms "
                          f"(default {1e3 * Settings().fairness_period_s:.0f})")
    _add_counts(run)
    run.add_argument("--only", action="append", default=[],
                     help="measure only this subject (repeatable), e.g. pgqueuer")
    run.add_argument("--pickup-base", metavar="REV", default=None,
                     help="git revision the pickup suite measures as 'before' "
                          f"(default {Settings().pickup_base})")
    run.add_argument("--systems", nargs="+", default=None,
                     choices=("rota", "rota-3p", "procrastinate", "pgqueuer"),
                     help="soak: the systems measured (default all four)")
    run.add_argument("--modes", nargs="+", default=None,
                     choices=("idle_xact", "rr_readers", "slot"),
                     help="soak: the ways the horizon is held (default all three)")
    run.add_argument("--rate", type=float, default=None, metavar="JOBS_S",
                     help=f"soak: jobs offered per second (default {Settings().soak_rate:g})")
    for phase, default in (("clean", Settings().soak_clean_s), ("held", Settings().soak_held_s),
                           ("recovery", Settings().soak_recovery_s)):
        run.add_argument(f"--{phase}-s", type=float, default=None, metavar="S",
                         help=f"soak: seconds of the {phase} phase (default {default:g}; "
                              f"--quick {getattr(quick(1), f'soak_{phase}_s'):g})")
    run.add_argument("--preload", type=int, default=None, metavar="N",
                     help="soak: N succeeded jobs in rota's table before the run, as a "
                          "store holds them for its retention (rota and rota-3p only)")
    run.add_argument("--jobs-reloptions", default=None, metavar="K=V,...",
                     help="soak: storage parameters set on rota's jobs table before the run, "
                          "e.g. autovacuum_vacuum_scale_factor=0.01 (rota and rota-3p only)")
    run.add_argument("--queue-limit", type=int, default=None, metavar="N",
                     help="soak: a concurrency limit of N jobs on rota's Queue, so that "
                          "its claims count the Queue's leases (rota and rota-3p only)")
    run.add_argument("--rows", type=int, nargs="+", default=None, metavar="N",
                     help="table sizes of the scale suite "
                          f"(default {' '.join(map(str, Settings().scale_rows))})")


def _add_ab(commands: Any) -> None:
    ab = _command(commands, "ab", "rota source trees side by side, runs alternating", """\
Measures two or more rota source trees side by side, runs alternating (A B, B A, ...);
prints every run, the medians and each tree's ratios to --before. --what:
  drain    a real `rota worker` (one Strict group, pool 20) emptying a fresh store of
           noop jobs: jobs/s from its spawn, the steady rate (90 % to 10 % left), its
           CPU per job; two --jobs sizes split CPU and wall time into a fixed part and
           one per job. --count instructions runs it under callgrind (instructions per
           job; valgrind), --count calls counts Python calls per function per job.
  tenants  the same drain over tenant Queues (--configs Q/B: B of Q Weighted Queues
           backlogged) beside one Queue (1/1), per tree.
  enqueue  enqueue rate through the store, --batch jobs a call (--keyed: a key each).
  store    the store alone: claim --batch + complete until empty, --threads threads;
           jobs/s and each call's round trip (--limit N: a Queue limit; --carry: each
           claim carries the previous successes). With --count instructions: the
           instructions per job of the claims and completions alone (callgrind, one
           thread; both sizes enqueue the larger size's jobs).
  planner  the Weighted planner alone, instructions per job (callgrind): one memory
           drain's planner calls (--configs), replayed by each tree.
A tree is a checkout, its src directory, or a git revision of this repository.""")
    ab.add_argument("--before", required=True, metavar="TREE", help="the reference tree")
    ab.add_argument("--after", nargs="*", default=[], metavar="TREE",
                    help="the trees compared with it (none: --before alone)")
    ab.add_argument("--what", choices=("drain", "tenants", "enqueue", "store", "planner"),
                    default="drain")
    ab.add_argument("--count", choices=("time", "instructions", "calls"), default="time",
                    help="drain, tenants, store (instructions): what is counted "
                         "(default time)")
    ab.add_argument("--stores", nargs="+", default=["sqlite", "postgres"],
                    choices=["sqlite", "postgres"])
    ab.add_argument("--runs", type=int, default=None,
                    help="runs per variant (default 5; tenants 2; counting 1)")
    ab.add_argument("--jobs", type=int, nargs="+", default=None, metavar="N",
                    help="jobs per run, or two sizes (default: drain 30000, tenants "
                         "20000, enqueue 3000, store 50000, planner 10000; counting "
                         "1000 4000)")
    ab.add_argument("--workers", type=int, default=1, help="drain: worker processes")
    ab.add_argument("--pin", metavar="CPUS",
                    help="drain: run the workers on these CPUs only (taskset -c CPUS)")
    ab.add_argument("--configs", nargs="+", default=["10000/100", "10000/10000"],
                    metavar="Q/B", help="tenants, planner: Queues/backlogged")
    ab.add_argument("--batch", type=int, nargs="+", default=None,
                    help="enqueue: jobs a call (default 1 100); store: claim size (20)")
    ab.add_argument("--keyed", action="store_true", help="enqueue: also with a key per job")
    ab.add_argument("--threads", type=int, default=1, help="store: draining threads")
    ab.add_argument("--limit", type=int, default=None, help="store: also under a Queue limit")
    ab.add_argument("--carry", action="store_true",
                    help="store: claims carry the previous claim's successes")
    ab.add_argument("--top", type=int, default=40, help="--count calls: rows of the diff")


def _add_rest(commands: Any) -> None:
    peers = _command(commands, "peers", "the peer comparison (docs/images/peers.*)", """\
Measures drain jobs/s and bulk enqueue rows/s of rota (SQLite, PostgreSQL), pgqueuer and
procrastinate in one run (the drain suite), then writes the figures (median, min, max)
as JSON and draws them. --from takes them from an earlier run's results JSON instead.""")
    _add_counts(peers)
    peers.add_argument("--from", dest="source", type=Path, metavar="RESULTS_JSON",
                       help="figures of an earlier run (benchmarks/results/latest.json)")
    peers.add_argument("--figures", type=Path, default=PEERS_JSON)
    peers.add_argument("--out", type=Path, default=PEERS_JSON.with_suffix(".png"))

    profile = _command(commands, "profile", "py-spy profile of a rota drain", """\
Measures where a rota worker's time goes while it drains --jobs noop jobs: py-spy over
every thread, summed into top functions (own and inclusive time), time by area (store
SQL, driver, runtime, asyncio, ...) and the share of dispatch planning. Writes
benchmarks/results/profile-<store>.json and the raw stacks beside it.""")
    profile.add_argument("--store", choices=("postgres", "sqlite"), default="postgres")
    profile.add_argument("--jobs", type=int, default=50_000)

    chart = _command(commands, "chart", "plots from figures already measured", """\
Draws figures already measured; measures nothing. peers: the JSON `peers` writes;
queues: `python -m benchmarks.suites.queues --json`; scale: `python -m
benchmarks.suites.scale --json`; fairness: docs/images/fairness.json, which `run
fairness` writes (light tenants' p99 wait per model, log scale, a bar group per store);
soak: benchmarks/results/soak.json, which `run soak` writes (one PNG per figure into the
directory --out, default docs/images/soak, and its table and targets printed); several
soak runs' files with the same rate and phases are drawn and tabled together.""")
    chart.add_argument("chart", choices=("peers", "queues", "scale", "fairness", "soak"))
    chart.add_argument("json", type=Path, nargs="+")
    chart.add_argument("--out", type=Path, help="the PNG (default: the JSON's name, .png)")
    chart.add_argument("--title", default="claim latency against table size",
                       help="scale: the chart's title")

    statement = _command(commands, "statement", "one PostgreSQL statement's variants", """\
Measures the round trip of variants of one hot PostgreSQL statement (claim or complete
of 20 jobs), each variant LABEL=STATEMENT_FILE[:SETUP_FILE] in its own schema, the
variants taking turns call by call on one connection; median and p90 in ms.""")
    statement.add_argument("kind", choices=["claim", "complete"])
    statement.add_argument("variants", nargs="+", metavar="LABEL=FILE[:SETUP]")
    statement.add_argument("--calls", type=int, default=4000, help="calls per variant")
    statement.add_argument("--sync", choices=["on", "off"], default="off",
                           help="synchronous_commit of the measuring connection")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    _add_run(commands)
    _add_ab(commands)
    _add_rest(commands)
    args = parser.parse_args(argv)
    if getattr(args, "runs", 1) is not None and getattr(args, "runs", 1) < 1:
        parser.error("--runs must be at least 1")
    if args.command == "run" and args.suite_name:
        if args.suite not in ("all", args.suite_name):
            parser.error(f"two suites named: {args.suite_name} and --suite {args.suite}")
        args.suite = args.suite_name
    if args.command == "run" and getattr(args, "preload", None) is not None \
            and args.preload < 0:
        parser.error("--preload must be 0 or more jobs")
    if args.command == "run" and getattr(args, "queue_limit", None) is not None \
            and args.queue_limit < 1:
        parser.error("--queue-limit must be at least 1 job")
    for option in ("preload", "jobs_reloptions", "queue_limit"):
        if args.command == "run" and getattr(args, option, None) and (
                not args.systems or any(not name.startswith("rota") for name in args.systems)):
            parser.error(f"--{option.replace('_', '-')} is about rota's store: give "
                         "--systems rota and/or rota-3p")
    if args.command == "ab" and args.count != "time" and args.what not in ("drain", "tenants") \
            and (args.what, args.count) != ("store", "instructions"):
        parser.error("--count counts a drain's worker (--what drain or tenants), or "
                     "instructions of the store alone (--what store --count instructions)")
    if args.command == "ab" and args.what == "store" and args.count != "time" \
            and args.threads != 1:
        parser.error("--count instructions of the store counts one thread: drop --threads")
    if args.command == "ab" and args.count == "calls" and len(args.jobs or [0, 0]) != 2:
        parser.error("--count calls takes two --jobs sizes (calls per job are their slope)")
    return args


def soak_settings(settings: Settings, args: argparse.Namespace) -> Settings:
    """`settings` with the soak suite's options given on the command line."""
    given = {"soak_systems": tuple(args.systems) if getattr(args, "systems", None) else None,
             "soak_modes": tuple(args.modes) if getattr(args, "modes", None) else None,
             "soak_rate": getattr(args, "rate", None),
             "soak_preload": getattr(args, "preload", None),
             "soak_jobs_reloptions": getattr(args, "jobs_reloptions", None),
             "soak_queue_limit": getattr(args, "queue_limit", None),
             **{f"soak_{p}_s": getattr(args, f"{p}_s", None)
                for p in ("clean", "held", "recovery")}}
    return dataclasses.replace(settings, **{k: v for k, v in given.items() if v is not None})


def measure(suites: list[str], args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    """Run `suites`, print the table, write benchmarks/results/latest.json; its document."""
    from benchmarks import cleanup, report
    from benchmarks.results import SuiteResult
    from benchmarks.suites import runner
    from benchmarks.targets import Target
    from benchmarks.targets.peers import PgqueuerTarget, ProcrastinateTarget
    from benchmarks.targets.rota_target import RotaTarget

    cleanup.install()
    settings = quick(args.runs) if args.quick else Settings(runs=args.runs)
    if getattr(args, "pickup_base", None):
        settings = dataclasses.replace(settings, pickup_base=args.pickup_base)
    if getattr(args, "rows", None):
        settings = dataclasses.replace(settings, scale_rows=tuple(args.rows))
    if getattr(args, "stores", None):
        settings = dataclasses.replace(settings, fairness_stores=tuple(args.stores),
                                       families_stores=tuple(args.stores))
    if getattr(args, "heavy", None):
        settings = dataclasses.replace(settings, fairness_heavy_jobs=args.heavy)
    if getattr(args, "period_ms", None):
        settings = dataclasses.replace(settings, fairness_period_s=args.period_ms / 1e3)
    settings = soak_settings(settings, args)
    targets: list[Target] = [
        t for t in (RotaTarget("postgres"), RotaTarget("sqlite"), PgqueuerTarget(),
                    ProcrastinateTarget())
        if not getattr(args, "only", None) or t.name in args.only]
    started = time.perf_counter()
    info = report.versions()
    print(f"rota benchmarks: suites {', '.join(suites)}; {settings.runs} run(s) per figure"
          f"{' (quick)' if args.quick else ''}")
    print(f"python {info['python']}, PostgreSQL {info['postgresql']}, "
          f"rota {str(info['rota_git_sha'])[:12]}, {info['packages']}", flush=True)
    results: dict[str, SuiteResult] = {}
    try:
        for suite in suites:
            print(f"\n== {suite}", flush=True)
            suite_started = time.perf_counter()
            results[suite] = runner(suite)(targets, settings, results)
            print(f"   ({time.perf_counter() - suite_started:.0f} s)", flush=True)
    finally:
        cleanup.run_all()
        rows, skipped, detail = report.merge(results, SUITES + EXTRA_SUITES)
        elapsed = time.perf_counter() - started
        print(f"\n{report.table(rows)}")
        for what, why in skipped.items():
            print(f"skipped {what}: {why}")
        print(f"\ntotal {elapsed:.0f} s")
        document: dict[str, Any] = {
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
        }
        report.write_json(report.RESULTS / "latest.json", document)
        print(f"wrote {report.RESULTS / 'latest.json'}")
    return document


def peer_figures(document: dict[str, Any]) -> dict[str, Any]:
    """The chart's figures from a results document: per metric, subject -> [median, min,
    max], and the run they come from."""
    figures: dict[str, Any] = {"drain": {}, "enqueue": {}}
    jobs: list[int] = []
    for row in document["rows"]:
        if row["suite"] in figures:
            figures[row["suite"]][row["subject"]] = [round(row[key]) for key in
                                                     ("median", "min", "max")]
            jobs.append(int(row["note"].split()[0].replace(",", "")))
    versions = document["versions"]
    runs = f"{document['settings']['runs']} run{'s' if document['settings']['runs'] > 1 else ''}"
    figures["run"] = (f"python3 -m benchmarks {document['command'][3]}, {runs} per figure, "
                      f"{document['finished_at'][:16].replace('T', ' ')} UTC, rota "
                      f"{str(versions['rota_git_sha'])[:7]}")
    figures["note"] = (f"{min(jobs):,}-{max(jobs):,} noop jobs, one worker process, 20 "
                       f"concurrent jobs; PostgreSQL {versions['postgresql'].split()[0]} on "
                       f"the same {versions['machine']['cpus']}-core machine; median with "
                       f"min-max of {runs}")
    return figures


def figures_json(figures: dict[str, Any]) -> str:
    """The figures as JSON, each [median, min, max] on one line."""
    return re.sub(r"\[\s+([^][]*?)\s+\]",
                  lambda m: "[" + ", ".join(v.strip() for v in m[1].split(",")) + "]",
                  json.dumps(figures, indent=1)) + "\n"


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.command == "run":
        measure(list(SUITES) if args.suite == "all" else [args.suite], args, argv)
        return 0
    if args.command == "peers":
        from benchmarks import chart

        document = (json.loads(args.source.read_text()) if args.source
                    else measure(["drain"], args, argv))
        figures = peer_figures(document)
        args.figures.write_text(figures_json(figures))
        chart.peers(figures, args.out)
        print(f"wrote {args.figures} and {args.out}")
        return 0
    if args.command == "ab":
        from benchmarks import ab

        return ab.main(args)
    if args.command == "profile":
        from benchmarks import profiling

        return profiling.main(args)
    if args.command == "chart":
        from benchmarks import chart

        return chart.main(args)
    from benchmarks import statement

    return statement.main(args)
