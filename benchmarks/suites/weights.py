"""weights: three Queues backlogged at 6:3:1 (e.g. 18,000 / 9,000 / 3,000 jobs), drained by
3 worker processes on one PostgreSQL store; each handler writes (Queue, start time), the
three logs are merged by time into one served order, and `analyse` measures how evenly it
follows the weights: overall shares, the worst deviation from the weights' shares over
sliding windows of consecutive services, and each Queue's longest gap (the most
consecutive services that went to other Queues). Only the backlogged part of a drain says
anything about the selection rule (up to the moment the first Queue ran dry: after that
the others must take its turns, whatever the rule), so that prefix is analysed.

Two selection rules through the same harness, the same rota tables and claim SQL:
- rota: `rota worker` with one Worker Group, `Weighted([("a", 6), ("b", 3), ("c", 1)])`,
  pool_size 20 (smooth weighted round-robin);
- random weighted (Sidekiq's rule): `benchmarks.workers.random_weighted_worker`, which
  draws each slot's Queue at random in proportion to weight and claims with rota's store.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks import pg
from benchmarks.processes import WorkerProcess, python_argv, wait_drained
from benchmarks.results import Figure, SuiteResult
from benchmarks.settings import Settings
from benchmarks.targets.rota_target import (
    UNFINISHED_POSTGRES,
    rota_command,
    rota_missing,
)
from benchmarks.workers.rota_app import make_app

DATABASE = "weights_bench"
ROTA = "rota Weighted"
RANDOM = "random weighted"


@dataclass(frozen=True, slots=True)
class Fairness:
    served: int
    shares: dict[str, float]  # Queue -> fraction of all served
    worst_window_deviation: float  # max over windows and Queues of |share - target|
    mean_window_deviation: float  # mean over windows of max |share - target|
    longest_gap: dict[str, int]  # Queue -> most consecutive services to other Queues

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def backlogged_prefix(sequence: Sequence[str]) -> Sequence[str]:
    """The served order up to (and including) the last job of the first Queue to run dry."""
    last: dict[str, int] = {}
    for index, queue in enumerate(sequence):
        last[queue] = index
    return sequence[: min(last.values()) + 1] if last else sequence


def analyse(sequence: Sequence[str], weights: dict[str, int], window: int) -> Fairness:
    total_weight = sum(weights.values())
    target = {q: w / total_weight for q, w in weights.items()}
    n = len(sequence)
    counts = dict.fromkeys(weights, 0)
    for queue in sequence:
        counts[queue] = counts.get(queue, 0) + 1
    shares = {q: counts[q] / n if n else 0.0 for q in weights}

    worst = 0.0
    deviation_sum = 0.0
    windows = 0
    if n >= window:
        in_window = dict.fromkeys(weights, 0)
        for queue in sequence[:window]:
            in_window[queue] += 1
        for start in range(n - window + 1):
            if start:
                in_window[sequence[start - 1]] -= 1
                in_window[sequence[start + window - 1]] += 1
            dev = max(abs(in_window[q] / window - target[q]) for q in weights)
            worst = max(worst, dev)
            deviation_sum += dev
            windows += 1

    last_seen = dict.fromkeys(weights, -1)
    gaps = dict.fromkeys(weights, 0)
    for index, queue in enumerate(sequence):
        gaps[queue] = max(gaps[queue], index - last_seen[queue] - 1)
        last_seen[queue] = index
    return Fairness(n, shares, worst, deviation_sum / windows if windows else 0.0, gaps)


def _weights_text(settings: Settings) -> str:
    return ",".join(f"{queue}={weight}" for queue, weight, _ in settings.weights_backlog)


def _worker(rule: str, url: str, settings: Settings, served: Path, label: str) -> WorkerProcess:
    weights = _weights_text(settings)
    env = {"BENCH_SERVED_FILE": str(served)}
    if rule == ROTA:
        env.update(ROTA_BENCH_STORE=url, ROTA_BENCH_POLICY=f"weighted:{weights}",
                   ROTA_BENCH_POOL=str(settings.weights_pool))
        argv = [rota_command(), "worker", "benchmarks.workers.rota_app:app"]
    else:
        argv = python_argv("-m", "benchmarks.workers.random_weighted_worker", url, weights,
                           str(settings.weights_pool))
    return WorkerProcess(label, argv, env)


def shares_once(rule: str, settings: Settings, label: str) -> tuple[Fairness, float]:
    """One run: the analysed served order and the drain rate (jobs/s) of the 3 processes."""
    url = pg.fresh_database(DATABASE)
    counter = pg.Counter(url, UNFINISHED_POSTGRES)
    try:
        app = make_app(url, "strict", settings.weights_pool)
        try:
            served_job = app.jobs["served"]
            for queue, _weight, count in settings.weights_backlog:
                configured = served_job.configure(queue=queue)
                for offset in range(0, count, settings.enqueue_chunk):
                    configured.enqueue_many([(queue,)] * min(settings.enqueue_chunk,
                                                             count - offset))
        finally:
            app.close()
        pg.analyze(url)  # fresh planner statistics after the bulk load, as in drain
        total = sum(count for _q, _w, count in settings.weights_backlog)
        with tempfile.TemporaryDirectory(prefix="rota-bench-weights-") as scratch:
            files = [Path(scratch) / f"served-{n}.txt" for n in range(settings.weights_processes)]
            start = time.perf_counter()
            workers = [_worker(rule, url, settings, f, f"{label}-{n}")
                       for n, f in enumerate(files)]
            try:
                end = wait_drained(counter, workers, settings.drain_timeout_s,
                                   settings.poll_interval_s)
            finally:
                for worker in workers:
                    worker.stop()
            entries: list[tuple[int, str]] = []
            for file in files:
                if file.exists():
                    for line in file.read_text().splitlines():
                        queue, ns = line.split()
                        entries.append((int(ns), queue))
        entries.sort()
        if len(entries) != total:
            print(f"    warning: {rule} recorded {len(entries)} of {total} jobs served")
        weights = {queue: weight for queue, weight, _ in settings.weights_backlog}
        order = backlogged_prefix([q for _ns, q in entries])
        return analyse(order, weights, settings.weights_window), total / (end - start)
    finally:
        counter.close()
        pg.drop_database(DATABASE)


def run(settings: Settings) -> SuiteResult:
    result = SuiteResult()
    weights_label = ":".join(str(w) for _q, w, _n in settings.weights_backlog)
    backlog = " / ".join(f"{n:,}" for _q, _w, n in settings.weights_backlog)
    last_queue = settings.weights_backlog[-1][0]
    for rule in (ROTA, RANDOM):
        why = rota_missing("rota.store.postgres", needs_worker=(rule == ROTA))
        if why:
            result.skipped[rule] = why
            print(f"  weights {rule}: skipped ({why})")
            continue
        runs: list[Fairness] = []
        rates: list[float] = []
        for run_index in range(settings.runs):
            label = f"weights-{rule.replace(' ', '-')}-{run_index + 1}"
            fairness, rate = shares_once(rule, settings, label)
            runs.append(fairness)
            rates.append(rate)
            shares = " / ".join(f"{100 * s:.1f}" for s in fairness.shares.values())
            print(f"  weights {rule} run {run_index + 1}: {fairness.served:,} jobs served "
                  f"while all Queues were backlogged; shares {shares} %, worst "
                  f"{settings.weights_window}-window deviation "
                  f"{100 * fairness.worst_window_deviation:.1f} pp, longest gap of "
                  f"{last_queue} {fairness.longest_gap[last_queue]}, {rate:,.0f} jobs/s",
                  flush=True)
        subject = f"{rule} {weights_label}"
        note = f"{backlog} jobs, {settings.weights_processes} processes x pool " \
               f"{settings.weights_pool}"
        for queue, _w, _n in settings.weights_backlog:
            result.add("weights", subject, f"share {queue} %",
                       Figure.of([100 * r.shares[queue] for r in runs], "%", note))
        result.add("weights", subject, f"worst {settings.weights_window}-window dev pp",
                   Figure.of([100 * r.worst_window_deviation for r in runs], "pp", note))
        result.add("weights", subject, f"mean {settings.weights_window}-window dev pp",
                   Figure.of([100 * r.mean_window_deviation for r in runs], "pp", note))
        result.add("weights", subject, f"longest gap of {last_queue}",
                   Figure.of([float(r.longest_gap[last_queue]) for r in runs], "jobs", note))
        result.add("weights", subject, "jobs/s", Figure.of(rates, "jobs/s", note))
        result.detail[subject] = [r.as_json() for r in runs]
    return result
