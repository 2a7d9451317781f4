"""`python -m benchmarks ab`: two or more rota source trees side by side, runs alternating.

A tree is a directory holding rota's `src` (a checkout, or its `src` itself) or a git
revision of this repository (`git archive`, into a temporary directory). Every measured
process imports rota from the tree's `src` and the benchmark code from this checkout, so
each tree brings its own schema, statements and runtime to the same harness. The runs
alternate A B, B A, A B, ... (with more trees: each run walks them in turn, every other run
in reverse) so that drift on a shared machine falls on every tree alike. Every run is
printed, then the medians and each variant's ratio to the same variant of `--before`.
Figures, never pass/fail.

`alternate` and `resolve_tree` are the one implementation of this; the pickup suite uses
them too.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from benchmarks import cleanup
from benchmarks.processes import WorkerProcess, python_argv, wait_drained
from benchmarks.targets.rota_target import APP, RotaTarget, run_child, tree_env
from benchmarks.venv import ROOT

T = TypeVar("T")
Metrics = dict[str, float]
# Runs `rota worker` with a profile hook on every thread counting calls per Python
# function; writes them as JSON to the file named by argv[1] at exit (SIGTERM is a
# graceful stop).
COUNTING = f"""
import atexit, collections, json, sys, threading
calls = collections.Counter()
def hook(frame, event, arg):
    if event == "call":
        calls[(frame.f_code.co_filename, frame.f_code.co_qualname)] += 1
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
sys.exit(main(["worker", {APP!r}]))
"""
CALLGRIND_TOTAL = re.compile(r"^(?:totals|summary):\s*(\d+)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Tree:
    label: str  # "before", "after", "after2", ...
    src: Path  # the directory holding the `rota` package


@dataclass(frozen=True, slots=True)
class Variant:
    tree: Tree
    option: str = ""  # "", "keyed", "limit 5", "10000/100", ...

    @property
    def label(self) -> str:
        return f"{self.tree.label}, {self.option}" if self.option else self.tree.label


def resolve_tree(label: str, spec: str) -> Tree:
    """A checkout, a `src` directory, or a git revision of this repository (extracted into
    a temporary directory, removed at exit)."""
    path = Path(spec)
    for src in (path / "src", path):
        if (src / "rota" / "__init__.py").is_file():
            return Tree(label, src.resolve())
    folder = Path(tempfile.mkdtemp(prefix=f"rota-{label}-"))
    cleanup.on_exit(f"remove {folder}", lambda: shutil.rmtree(folder, True))
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", spec, "src"],
                                 check=True, capture_output=True).stdout
    except subprocess.CalledProcessError as error:
        raise SystemExit(f"{spec!r} is neither a rota tree nor a git revision: "
                         f"{error.stderr.decode().strip()}") from None
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return Tree(label, folder / "src")


def alternate(items: Sequence[T], runs: int, measure: Callable[[T, int], None]) -> None:
    """measure(item, run) for every item, `runs` times: A B, B A, A B, ..."""
    for run in range(runs):
        for item in items if run % 2 == 0 else items[::-1]:
            measure(item, run)


def check_tree(tree: Tree) -> None:
    """Refuse a tree whose processes would import some other rota."""
    env = {**os.environ, **tree_env(tree.src)}
    found = subprocess.run(
        [sys.executable, "-c", "import pathlib, rota; "
         "print(pathlib.Path(rota.__file__).resolve().parent.parent)"],
        env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    if Path(found) != tree.src:
        raise SystemExit(f"{tree.label}: processes import rota from {found}, not {tree.src}")


# -- what is measured, one run each --------------------------------------------------------


def _worker_argv(options: argparse.Namespace, out: Path) -> list[str]:
    if options.count == "instructions":
        return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                *python_argv("-m", "rota.cli", "worker", APP)]
    if options.count == "calls":
        return python_argv("-c", COUNTING, str(out))
    pin = ["taskset", "-c", options.pin] if options.pin else []
    return [*pin, *python_argv("-m", "rota.cli", "worker", APP)]


def drain_run(variant: Variant, store: str, jobs: int, options: argparse.Namespace
              ) -> tuple[Metrics, dict[str, float]]:
    """A real `rota worker` drain of a fresh store: its figures, and (with `--count
    calls`) the Python calls per function."""
    tenants = tuple(map(int, variant.option.split("/"))) if "/" in variant.option else None
    target = RotaTarget(store, variant.tree.src, tenants, "rota_ab_bench")  # type: ignore[arg-type]
    target.prepare()
    try:
        target.enqueue_noops(jobs, 5_000)
        target.settle()
        with tempfile.TemporaryDirectory(prefix="rota-ab-") as folder:
            out = Path(folder) / "out"
            spec = target.worker(None)
            counting = options.count != "time"
            began = time.perf_counter()
            workers = [WorkerProcess(f"ab-{variant.tree.label}-{store}-{n}",
                                     _worker_argv(options, out), spec.env)
                       for n in range(1 if counting else options.workers)]
            polls: list[tuple[float, int]] = []
            try:
                end = wait_drained(target.unfinished, workers, 3600, 0.05 if not counting
                                   else 0.2, polls=polls)
                cpu_s = sum(worker.cpu_s() for worker in workers)
            finally:
                for worker in workers:
                    worker.stop(grace_s=300 if counting else 10)
            if options.count == "calls":
                return {}, {f"{Path(f).name} {name}": n
                            for f, name, n in json.loads(out.read_text())}
            if options.count == "instructions":
                match = CALLGRIND_TOTAL.search(out.read_text())
                if match is None:
                    raise RuntimeError(f"no instruction total in callgrind's output of "
                                       f"{variant.label}")
                return {"instructions": float(match.group(1))}, {}
    finally:
        target.discard()
    first = next(poll for poll in polls if poll[1] <= 0.9 * jobs)
    last = next(poll for poll in polls if poll[1] <= 0.1 * jobs)
    steady = (first[1] - last[1]) / (last[0] - first[0]) if last[0] > first[0] else 0.0
    return {"jobs/s": jobs / (end - began), "steady jobs/s": steady,
            "CPU us/job": cpu_s * 1e6 / jobs, "CPU ms": cpu_s * 1e3,
            "wall ms": (end - began) * 1e3}, {}


def store_run(variant: Variant, store: str, jobs: int, options: argparse.Namespace,
              batch: int) -> Metrics:
    """The store alone (rota_child enqueue or drain) on a fresh store of the tree's."""
    target = RotaTarget(store, variant.tree.src, None, "rota_ab_bench")
    target.prepare()
    try:
        if options.what == "enqueue":
            args = ["enqueue", target.url, str(jobs), str(batch)]
            args += ["--keyed"] if variant.option == "keyed" else []
        else:
            args = ["drain", target.url, str(jobs), str(batch), str(options.threads)]
            args += ["--limit", variant.option.split()[1]] if variant.option else []
            args += ["--carry"] if options.carry else []
            if options.count == "instructions":  # the drain alone: both sizes enqueue alike
                args += ["--enqueue", str(max(options.jobs or COUNTED_SIZES))]
                return {"instructions": float(callgrind_total(
                    variant, python_argv("-m", "benchmarks.workers.rota_child", *args)))}
        got = run_child(variant.tree.src, *args)
    finally:
        target.discard()
    if Path(str(got.pop("rota"))) != variant.tree.src:
        raise SystemExit(f"{variant.label}: the child did not import {variant.tree.src}")
    metrics: Metrics = {"jobs/s": float(got.pop("jobs/s"))}  # type: ignore[arg-type]
    for name, (median, p90) in got.items():  # type: ignore[misc]
        metrics[f"{name} p50"], metrics[f"{name} p90"] = median, p90
    return metrics


@contextmanager
def planner_log(queues: int, backlogged: int, jobs: int) -> Iterator[Path]:
    """One memory drain's planner calls, recorded with this checkout's rota (the planner
    is exact: the calls are the same on every tree that plans alike)."""
    import pickle

    from benchmarks.suites.queues import PlannerLog, measure

    log = PlannerLog()
    measure("memory", queues, backlogged, jobs, log=log)
    with tempfile.TemporaryDirectory(prefix="rota-ab-planner-") as folder:
        path = Path(folder) / "log.pkl"
        path.write_bytes(pickle.dumps((log.calls, log.orders)))
        yield path


def callgrind_total(variant: Variant, argv: list[str], env: dict[str, str] | None = None
                    ) -> int:
    """The instructions callgrind counts in `argv` (a python run under the variant's tree)."""
    with tempfile.TemporaryDirectory(prefix="rota-ab-") as folder:
        out = Path(folder) / "out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
                       cwd=ROOT, check=True, capture_output=True,
                       env={**os.environ, **tree_env(variant.tree.src), **(env or {})})
        match = CALLGRIND_TOTAL.search(out.read_text())
        if match is None:
            raise RuntimeError(f"no instruction total in callgrind's output of {variant.label}")
        return int(match.group(1))


def planner_run(variant: Variant, log: Path, queues: int, jobs: int) -> Metrics:
    """Instructions per job of the tree's planner replaying `log` (callgrind: the replay
    less the load alone)."""
    # the hash order of sets moves a replay's count by up to ~2 %
    counts = [callgrind_total(variant, python_argv(
        "-m", "benchmarks.workers.rota_child", "replay", str(log), str(queues), run),
        {"PYTHONHASHSEED": "0"}) for run in ("0", "1")]
    return {"planner instructions/job": (counts[1] - counts[0]) / jobs}


# -- the command ---------------------------------------------------------------------------

DEFAULTS: dict[str, tuple[int, list[int]]] = {  # --what -> (runs, --jobs)
    "drain": (5, [30_000]), "tenants": (2, [20_000]), "enqueue": (5, [3_000]),
    "store": (5, [50_000]), "planner": (1, [10_000])}
COUNTED_SIZES = [1_000, 4_000]  # --count: the two drain sizes whose difference is per job
HIDDEN = ("CPU ms", "wall ms")  # kept for the split into a fixed part and one per job


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3f}" if abs(value) < 1 \
        else f"{value:.1f}"


def _shown(metrics: Metrics) -> str:
    return "  ".join(f"{name} {_number(value)}" for name, value in metrics.items()
                     if name not in HIDDEN)


def variants_of(trees: list[Tree], options: argparse.Namespace) -> list[Variant]:
    if options.what in ("tenants", "planner"):
        configs = (["1/1"] if options.what == "tenants" else []) + options.configs
        return [Variant(tree, config) for tree in trees for config in configs]
    choices = [""]
    if options.what == "enqueue" and options.keyed:
        choices.append("keyed")
    if options.what == "store" and options.limit:
        choices.append(f"limit {options.limit}")
    return [Variant(tree, choice) for tree in trees for choice in choices]


def summarise(scope: str, results: dict[Variant, list[Metrics]]) -> dict[Variant, Metrics]:
    """Print each variant's medians and its ratios to the same option on the first tree
    and (with several options) to the first option on the same tree."""
    medians = {variant: {name: statistics.median(run[name] for run in runs)
                         for name in runs[0]} for variant, runs in results.items() if runs}
    variants = list(medians)
    for variant in variants:
        references = [other for other in variants if other != variant and (
            (other.option == variant.option and other.tree == variants[0].tree) or
            (other.tree == variant.tree and other.option == variants[0].option))]
        ratios = "; ".join(
            f"/ {other.label}: " + ", ".join(
                f"{name} {medians[variant][name] / medians[other][name]:.3f}"
                for name in medians[variant] if name not in HIDDEN and medians[other][name])
            for other in references)
        print(f"{scope} MEDIAN {variant.label}: {_shown(medians[variant])}"
              + (f"  ({ratios})" if ratios else ""), flush=True)
    return medians


def split(scope: str, sizes: list[int], medians: list[dict[Variant, Metrics]]) -> None:
    """Two drain sizes: each quantity = a fixed part + a part per job (the start-up and
    stop of the worker apart from the drain itself)."""
    small, large = sizes
    for variant, at_small in medians[0].items():
        parts = []
        for name in ("CPU ms", "wall ms", "instructions"):
            if name in at_small:
                per_job = (medians[1][variant][name] - at_small[name]) / (large - small)
                fixed = at_small[name] - per_job * small
                unit = "us" if name.endswith("ms") else ""
                scale = 1e3 if unit else 1
                parts.append(f"{name.split()[0]} per job {_number(per_job * scale)}{unit}, "
                             f"fixed {_number(fixed)}{' ms' if unit else ''}")
        print(f"{scope} SPLIT {variant.label}: {'; '.join(parts)}", flush=True)


def calls_diff(scope: str, sizes: list[int], counted: dict[tuple[Variant, int], dict[str, float]],
               variants: list[Variant], top: int) -> None:
    """Python calls per job (the slope between the two sizes), and the functions whose
    calls per job differ between the first tree and each other one."""
    small, large = sizes
    per_job = {variant: {name: (counted[(variant, large)].get(name, 0)
                                - counted[(variant, small)].get(name, 0)) / (large - small)
                         for name in counted[(variant, small)] | counted[(variant, large)]}
               for variant in variants}
    for variant in variants:
        print(f"{scope} {variant.label}: {sum(per_job[variant].values()):.1f} Python calls "
              "per job", flush=True)
    first = per_job[variants[0]]
    for variant in variants[1:]:
        other = per_job[variant]
        diffs = sorted(((other.get(k, 0.0) - first.get(k, 0.0), k) for k in first | other),
                       key=lambda diff: -abs(diff[0]))
        print(f"{scope} calls per job, {variant.label} minus {variants[0].label}:")
        for diff, name in diffs[:top]:
            if abs(diff) >= 0.01:
                print(f"  {diff:+8.2f}  {name}")


def checked_trees(before: str, after: Sequence[str]) -> list[Tree]:
    """The trees to compare, labelled "before" and "after" ("after1", "after2", ... for
    several), each checked and printed with its source folder."""
    labels = ["before"] + (["after"] if len(after) == 1 else
                           [f"after{n + 1}" for n in range(len(after))])
    trees = [resolve_tree(label, spec)
             for label, spec in zip(labels, [before, *after], strict=True)]
    for tree in trees:
        check_tree(tree)
        print(f"{tree.label} = {tree.src}", flush=True)
    return trees


def main(options: argparse.Namespace) -> int:
    cleanup.install()
    trees = checked_trees(options.before, options.after)
    runs, jobs = DEFAULTS[options.what]
    counting = options.count != "time"  # a count, not a time: one run of two sizes
    runs = options.runs or (1 if counting else runs)
    sizes = options.jobs or (COUNTED_SIZES if counting else jobs)
    variants = variants_of(trees, options)
    if options.what == "planner":
        for config in options.configs:
            planner_series(config, [v for v in variants if v.option == config], runs,
                           sizes[0])
        return 0
    for store in options.stores:
        for batch in options.batch or ([1, 100] if options.what == "enqueue" else [20]):
            counted: dict[tuple[Variant, int], dict[str, float]] = {}
            medians = [series(store, batch, size, variants, runs, options, counted)
                       for size in sizes]
            if options.count == "calls":
                calls_diff(f"{store:8}", sizes, counted, variants, options.top)
            elif len(sizes) == 2:
                split(f"{store:8}", sizes, medians)
    return 0


def series(store: str, batch: int, size: int, variants: list[Variant], runs: int,
           options: argparse.Namespace, counted: dict[tuple[Variant, int], dict[str, float]]
           ) -> dict[Variant, Metrics]:
    """The variants' alternating runs at one store, batch and size; their medians (with
    `--count calls`, the calls per function go to `counted` instead)."""
    scope = f"{store:8} {size:,} jobs" + (
        f", batch {batch}" if options.what in ("enqueue", "store") else "")
    results: dict[Variant, list[Metrics]] = {variant: [] for variant in variants}

    def measure(variant: Variant, run: int) -> None:
        if options.what in ("enqueue", "store"):
            metrics = store_run(variant, store, size, options, batch)
        else:
            metrics, calls = drain_run(variant, store, size, options)
            if options.count == "calls":
                counted[(variant, size)] = calls
                print(f"{scope} {variant.label}: counted", flush=True)
                return
        results[variant].append(metrics)
        print(f"{scope} run {run + 1} {variant.label}: {_shown(metrics)}", flush=True)

    alternate(variants, runs, measure)
    return summarise(scope, results) if options.count != "calls" else {}


def planner_series(config: str, variants: list[Variant], runs: int, jobs: int) -> None:
    queues, backlogged = map(int, config.split("/"))
    results: dict[Variant, list[Metrics]] = {variant: [] for variant in variants}
    with planner_log(queues, backlogged, jobs) as log:
        def measure(variant: Variant, run: int) -> None:
            results[variant].append(planner_run(variant, log, queues, jobs))
            print(f"planner {config} run {run + 1} {variant.label}: "
                  f"{_shown(results[variant][-1])}", flush=True)

        alternate(variants, runs, measure)
    summarise(f"planner {config}", results)
