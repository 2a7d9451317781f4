"""fairness: the noisy neighbour. One heavy tenant enqueues a burst (50,000 jobs at once,
from a process of its own) while 99 light tenants trickle (each one job every 200 ms,
~500 jobs/s in all, well under the pool's capacity); every job sleeps 3 ms, pool 20, one
worker process on a fresh store (SQLite and PostgreSQL). The same workload under each
scheduling model:

- rota Weighted: `rota worker`, one Worker Group, `Weighted` over one Queue per tenant,
  every weight 1 (what a rota user gets);
- one FIFO Queue: `rota worker`, `Strict` over one Queue holding every tenant's jobs (what a
  Celery / RQ / pgqueuer user gets);
- random Queue: `benchmarks.workers.tenant_worker random`, each free slot drawn
  uniformly among the tenant Queues with due work (Dramatiq / Sidekiq style);
- FIFO + cap 2: `benchmarks.workers.tenant_worker caps`, one FIFO order over every
  tenant's jobs, a tenant with 2 jobs running skipped (Oban Pro / River Pro's partitioned
  limit);
- rota Weighted, heavy over 10 Queues: the heavy tenant's burst spread over 10 Queues,
  all 109 Queues of weight 1;
and the baseline: the same trickle alone under rota Weighted, no neighbour.

The jobs write (tenant, enqueue stamp, started_at) as they start; a job's enqueued_at is
when its enqueue call returned (the commit: time waiting for SQLite's write lock is the
store's, not the scheduler's). `analyse` gives each light tenant's p50 and p99 wait
(enqueued_at to start) over the jobs enqueued while the heavy tenant
was backlogged (from its burst to its last job's start), the same p99s over the light
jobs enqueued once the burst's last enqueue had returned, and each tenant's served share
over windows of 1,000 consecutive job starts (one window every 10 starts) within that
span, against its entitlement: the weighted max-min share of the window given what each
tenant had waiting or enqueued during it (a light tenant asking less than its share is
owed all it asked, the heavy tenant the rest), and the gaps of 20 ms or more in which no
job started. `analyse_passes` gives the rota worker's
passes over the same span: their round trips as its event loop saw them, and those of the
passes that started a light job. Writes docs/images/fairness.json (--quick:
benchmarks/results/fairness-quick.json).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import statistics
import tempfile
import threading
import time
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.processes import LOG_DIR, WorkerProcess, python_argv, wait_drained
from benchmarks.results import Figure, SuiteResult, percentile
from benchmarks.settings import Settings
from benchmarks.targets.rota_target import APP, RotaTarget, rota_command
from benchmarks.venv import ROOT

HEAVY = "heavy"
BASELINE = "no neighbour (rota Weighted)"
ROTA = "rota Weighted"
FIFO = "one FIFO Queue"
RANDOM = "random Queue"
CAPS = "FIFO + cap"
SPREAD = "rota Weighted, heavy over 10 Queues"
SPREAD_QUEUES = 10
STEP = 10  # a window starts every STEP job starts
GAP_S = 0.020  # a gap between two job starts this long or longer, while backlogged
BACKLOG_LEFT = 200  # unfinished jobs below which the burst counts as served


@dataclass(frozen=True, slots=True)
class Service:
    tenant: str
    enqueued_at: float
    started_at: float


@dataclass(frozen=True, slots=True)
class Outcome:
    light_jobs: int  # light jobs measured (enqueued while the heavy tenant was backlogged)
    p50_median_ms: float  # median over light tenants of each one's p50 wait
    p50_worst_ms: float
    p99_median_ms: float
    p99_worst_ms: float
    # The same p99s over the light jobs enqueued after the burst's last enqueue returned:
    # the scheduling alone, without the burst's own writes competing with the worker
    stored_p99_median_ms: float
    stored_p99_worst_ms: float
    heavy_worst_pp: float  # worst |served - entitled| share of the heavy tenant, any window
    light_worst_pp: float  # the same, worst light tenant
    heavy_share: float  # the heavy tenant's share of the starts while it was backlogged
    backlog_s: float  # burst enqueued -> the heavy tenant's last start
    jobs_per_s: float  # starts per second while it was backlogged
    windows: int
    # Gaps of GAP_S or more between two consecutive job starts while the heavy tenant
    # was backlogged (no Worker started anything meanwhile), and the longest gap
    gaps: int
    longest_gap_ms: float


def light_names(count: int) -> list[str]:
    return [f"l{n:02d}" for n in range(1, count + 1)]


def queue_of(model: str, tenant: str, index: int) -> str:
    if model == FIFO:
        return "bench"  # the benchmark App's Strict Queue
    if tenant == HEAVY and model == SPREAD:
        return f"{HEAVY}{index % SPREAD_QUEUES}"
    return tenant


def tenant_weights(model: str, lights: Sequence[str]) -> dict[str, float]:
    """What each tenant is owed in proportion to: the sum of its Queues' weights."""
    heavy = SPREAD_QUEUES if model == SPREAD else 1
    return {HEAVY: float(heavy), **dict.fromkeys(lights, 1.0)}


def entitled(demand: dict[str, int], weights: dict[str, float], slots: int
             ) -> dict[str, float]:
    """Weighted max-min shares of `slots`: a tenant asking less than its share gets all
    it asks, the others split the rest in proportion to weight."""
    if sum(demand.values()) <= slots:
        return {t: float(d) for t, d in demand.items()}
    out: dict[str, float] = {}
    left, left_weight = float(slots), sum(weights[t] for t in demand)
    order = sorted(demand, key=lambda t: demand[t] / weights[t])
    for n, tenant in enumerate(order):
        level = left / left_weight
        if demand[tenant] > level * weights[tenant]:
            out.update({t: level * weights[t] for t in order[n:]})
            break
        out[tenant] = float(demand[tenant])
        left -= demand[tenant]
        left_weight -= weights[tenant]
    return out


def analyse(services: Sequence[Service], weights: dict[str, float], window: int,
            since: float, until: float | None = None) -> Outcome:
    """Waits of light jobs enqueued in [since, until] (until: the heavy tenant's last start,
    or None without one: every later job); window shares while the heavy was backlogged."""
    order = sorted(services, key=lambda s: s.started_at)
    heavy_at = [i for i, s in enumerate(order) if s.tenant == HEAVY]
    end = order[heavy_at[-1]].started_at if heavy_at else float("inf")
    stored = max((s.enqueued_at for s in order if s.tenant == HEAVY), default=since)
    waits: dict[str, list[float]] = {t: [] for t in weights if t != HEAVY}
    later: dict[str, list[float]] = {t: [] for t in weights if t != HEAVY}
    for s in order:
        if s.tenant != HEAVY and since <= s.enqueued_at <= min(end, until or end):
            waits[s.tenant].append(1e3 * (s.started_at - s.enqueued_at))
            if s.enqueued_at > stored:
                later[s.tenant].append(1e3 * (s.started_at - s.enqueued_at))
    p50s, p99s, later_p99s = [], [], []
    for values, after in zip(waits.values(), later.values(), strict=True):
        if values:
            values.sort()
            p50s.append(percentile(values, 0.5))
            p99s.append(percentile(values, 0.99))
        if after:
            after.sort()
            later_p99s.append(percentile(after, 0.99))
    heavy_worst = light_worst = 0.0
    windows = long_gaps = 0
    share = rate = backlog_s = longest_gap = 0.0
    if heavy_at:
        first, last = heavy_at[0], heavy_at[-1]
        starts = [s.started_at for s in order]
        index_of: dict[str, list[int]] = {t: [] for t in weights}
        enqueued: dict[str, list[float]] = {t: [] for t in weights}
        for i, s in enumerate(order):
            index_of[s.tenant].append(i)
            enqueued[s.tenant].append(s.enqueued_at)
        for times in enqueued.values():
            times.sort()
        for k in range(first, last - window + 2, STEP):
            t1 = starts[k + window - 1]
            demand, served = {}, {}
            for tenant in weights:
                before = bisect_left(index_of[tenant], k)
                demand[tenant] = bisect_right(enqueued[tenant], t1) - before
                served[tenant] = bisect_left(index_of[tenant], k + window) - before
            owed = entitled(demand, weights, window)
            for tenant, amount in owed.items():
                deviation = abs(served[tenant] - amount) / window
                if tenant == HEAVY:
                    heavy_worst = max(heavy_worst, deviation)
                else:
                    light_worst = max(light_worst, deviation)
            windows += 1
        span = order[first:last + 1]
        gaps = [b - a for a, b in pairwise(starts[first:last + 1])]
        long_gaps = sum(1 for gap in gaps if gap >= GAP_S)
        longest_gap = max(gaps, default=0.0)
        share = sum(1 for s in span if s.tenant == HEAVY) / len(span)
        backlog_s = end - since
        rate = len(span) / max(end - order[first].started_at, 1e-9)
    return Outcome(sum(len(v) for v in waits.values()),
                   statistics.median(p50s) if p50s else float("nan"), max(p50s, default=0.0),
                   statistics.median(p99s) if p99s else float("nan"), max(p99s, default=0.0),
                   statistics.median(later_p99s) if later_p99s else float("nan"),
                   max(later_p99s, default=0.0),
                   100 * heavy_worst, 100 * light_worst, share, backlog_s, rate, windows,
                   long_gaps, 1e3 * longest_gap)


@dataclass(frozen=True, slots=True)
class Passes:
    """The rota worker's passes that claimed jobs while the heavy tenant was backlogged
    (rota_app's BENCH_PASS_FILE): each one's round trip as the event loop saw it."""

    passes: int
    p50_ms: float
    p99_ms: float
    jobs_each: float
    # The passes that started at least one light job (the one that ended last before it)
    light_p50_ms: float
    light_p99_ms: float


def analyse_passes(lines: Sequence[str], services: Sequence[Service], since: float,
                   until: float | None = None) -> Passes | None:
    """`lines`: "end_time round_trip_s jobs" per pass. None when none fell in the window."""
    heavy_starts = [s.started_at for s in services if s.tenant == HEAVY]
    end = min(max(heavy_starts, default=float("inf")), until or float("inf"))
    passes: list[tuple[float, float, int]] = []  # (ended, round trip ms, jobs)
    for line in lines:
        ended, trip_s, jobs = line.split()
        if since <= float(ended) <= end:
            passes.append((float(ended), 1e3 * float(trip_s), int(jobs)))
    passes.sort()
    if not passes:
        return None
    ends = [ended for ended, _, _ in passes]
    serving = sorted({bisect_right(ends, s.started_at) - 1 for s in services
                      if s.tenant != HEAVY and since <= s.started_at <= end} - {-1})
    trips = sorted(trip for _, trip, _ in passes)
    light = sorted(passes[i][1] for i in serving)
    return Passes(len(passes), percentile(trips, 0.5), percentile(trips, 0.99),
                  sum(jobs for _, _, jobs in passes) / len(passes),
                  percentile(light, 0.5), percentile(light, 0.99))


class Trickle(threading.Thread):
    """The light tenants' jobs, evenly spaced: job j of tenant j % L at start + j * period
    / L, enqueued in one call per 10 ms tick, each stamped with time.time() at its call;
    `committed` maps each stamp to time.time() when that call returned."""

    def __init__(self, url: str, model: str, lights: Sequence[str], period_s: float) -> None:
        super().__init__(daemon=True)
        self.url, self.model, self.lights = url, model, list(lights)
        self.gap_s = period_s / len(lights)
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self.committed: dict[float, float] = {}

    def run(self) -> None:
        from rota.core.jobs import NewJob
        from rota.store import open_store

        store = open_store(self.url)
        try:
            start = time.perf_counter()
            sent = 0
            while not self.stopping.wait(0.01):
                due = int((time.perf_counter() - start) / self.gap_s) + 1
                if due <= sent:
                    continue
                stamp, now = time.time(), datetime.now(UTC)
                tenants = [self.lights[j % len(self.lights)] for j in range(sent, due)]
                store.enqueue([NewJob("tenant_job", queue_of(self.model, t, 0), now,
                                      json.dumps([t, stamp])) for t in tenants], now)
                self.committed[stamp] = time.time()
                sent = due
        except BaseException as error:  # reported by the suite, which then stops
            self.error = error
        finally:
            store.close()


def burst(url: str, model: str, count: int, chunk: int = 5_000) -> dict[float, float]:
    """Enqueue the heavy tenant's jobs; each call's stamp -> when it returned. Run in a
    process of its own (`run_model`): building 5,000 jobs a call in the trickle's process
    would hold its interpreter lock while the trickle's enqueue holds the store's write
    lock, which no application whose tenants enqueue from their own requests would see
    (docs/investigations/tenant-fairness.md, "The harness had inflated the burst phase")."""
    from rota.core.jobs import NewJob
    from rota.store import open_store

    store = open_store(url)
    committed: dict[float, float] = {}
    try:
        for offset in range(0, count, chunk):
            stamp, now = time.time(), datetime.now(UTC)
            store.enqueue([NewJob("tenant_job", queue_of(model, HEAVY, i), now,
                                  json.dumps([HEAVY, stamp]))
                           for i in range(offset, min(offset + chunk, count))], now)
            committed[stamp] = time.time()
    finally:
        store.close()
    return committed


def start_worker(model: str, url: str, settings: Settings, served: Path, passes: Path,
                 label: str) -> WorkerProcess:
    lights = light_names(settings.fairness_light_tenants)
    heavy = ([f"{HEAVY}{n}" for n in range(SPREAD_QUEUES)] if model == SPREAD else [HEAVY])
    queues = heavy + lights
    env = {"BENCH_SERVED_FILE": str(served), "BENCH_JOB_S": str(settings.fairness_job_s),
           "ROTA_BENCH_STORE": url, "ROTA_BENCH_POOL": str(settings.fairness_pool)}
    if model in (RANDOM, CAPS):
        argv = python_argv("-m", "benchmarks.workers.tenant_worker", url,
                           "random" if model == RANDOM else "caps", ",".join(queues),
                           str(settings.fairness_pool), str(settings.fairness_cap))
        return WorkerProcess(label, argv, env)
    env["BENCH_PASS_FILE"] = str(passes)
    if model != FIFO:
        env["ROTA_BENCH_POLICY"] = "weighted:" + ",".join(f"{q}=1" for q in queues)
    return WorkerProcess(label, [rota_command(), "worker", APP], env)


def run_model(kind: str, model: str, settings: Settings
              ) -> tuple[list[Service], float, list[str]]:
    """One run on a fresh store: every job's service, when the burst began (or, for the
    baseline, when the measured trickle began), and the rota worker's passes (none for the
    models rota has no policy for)."""
    target = RotaTarget(kind, database="fairness_bench")
    target.prepare()
    scratch = Path(tempfile.mkdtemp(prefix="rota-bench-fairness-"))
    served = scratch / "served.txt"
    passes = scratch / "passes.txt"
    slug = "-".join("".join(c if c.isalnum() else " " for c in model).split())
    label = f"fairness-{kind}-{slug}"  # one per model, e.g. fairness-sqlite-FIFO-cap
    worker = start_worker(model, target.url, settings, served, passes, label)
    trickle = Trickle(target.url, model, light_names(settings.fairness_light_tenants),
                      settings.fairness_period_s)
    committed: dict[float, float] = {}
    heavy = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    try:
        heavy.submit(os.getpid).result()  # started before the clock starts
        trickle.start()
        time.sleep(settings.fairness_warmup_s)
        since = time.time()
        if model == BASELINE:
            time.sleep(settings.fairness_baseline_s)
        else:
            committed = heavy.submit(burst, target.url, model,
                                     settings.fairness_heavy_jobs).result()
            wait_drained(target.unfinished, [worker], settings.fairness_timeout_s,
                         settings.poll_interval_s, below=BACKLOG_LEFT)
            time.sleep(1.0)  # the trickle goes on past the heavy tenant's last start
        trickle.stopping.set()
        trickle.join()
        if trickle.error is not None:
            raise RuntimeError(f"the trickle failed: {trickle.error!r}")
        wait_drained(target.unfinished, [worker], settings.fairness_timeout_s,
                     settings.poll_interval_s)
    finally:
        heavy.shutdown()
        trickle.stopping.set()
        worker.stop()
        target.discard()
    committed.update(trickle.committed)
    services = []
    for line in served.read_text().splitlines():
        tenant, stamp, started_at = line.split()
        services.append(Service(tenant, committed[float(stamp)], float(started_at)))
    pass_lines = passes.read_text().splitlines() if passes.exists() else []
    shutil.rmtree(scratch, ignore_errors=True)
    # Every job's service and every pass beside the worker's log, for a closer look.
    (LOG_DIR / f"{label}.services").write_text("".join(
        f"{s.tenant} {s.enqueued_at:.6f} {s.started_at:.6f}\n" for s in services))
    if pass_lines:
        (LOG_DIR / f"{label}.passes").write_text("".join(f"{line}\n" for line in pass_lines))
    return services, since, pass_lines


MODELS = (BASELINE, ROTA, FIFO, RANDOM, CAPS, SPREAD)


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def table(outcomes: dict[str, dict[str, dict[str, Any]]], cap: int) -> str:
    """Markdown: one row per store and model."""
    lines = ["| store | model | light p50 ms, median / worst tenant | light p99 ms, median / "
             "worst tenant | light p99 ms once the burst is stored, median / worst | worst "
             "1,000-window deviation, heavy / light pp | heavy share while backlogged | "
             "backlog s | jobs/s | gaps of 20 ms+ (longest ms) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for kind, models in outcomes.items():
        for model, o in models.items():
            name = f"FIFO + cap {cap}" if model == CAPS else model
            if "timed_out_s" in o:
                lines.append(f"| {kind} | {name} | not drained in {o['timed_out_s']:.0f} s "
                             "| | | | | | | |")
                continue
            shares = ("" if not o["windows"] else
                      f"{o['heavy_worst_pp']:.2f} / {o['light_worst_pp']:.2f}")
            stored = ("" if model == BASELINE else
                      f"{_ms(o['stored_p99_median_ms'])} / {_ms(o['stored_p99_worst_ms'])}")
            rest = ("| | | |" if model == BASELINE else
                    f"{100 * o['heavy_share']:.1f} % | {o['backlog_s']:.1f} | "
                    f"{o['jobs_per_s']:,.0f} | {o.get('gaps', '')} "
                    f"({_ms(o.get('longest_gap_ms', float('nan')))}) |")
            lines.append(f"| {kind} | {name} | {_ms(o['p50_median_ms'])} / "
                         f"{_ms(o['p50_worst_ms'])} | {_ms(o['p99_median_ms'])} / "
                         f"{_ms(o['p99_worst_ms'])} | {stored} | {shares} | {rest}")
    return "\n".join(lines)


def _document(settings: Settings, out: Path) -> dict[str, Any]:
    """The JSON to write: this run's stores, beside the stores of an earlier run that this
    one does not measure (each store says when it ran, its burst and its trickle)."""
    info = report.versions()
    workload = {"light_tenants": settings.fairness_light_tenants,
                "job_s": settings.fairness_job_s, "pool": settings.fairness_pool,
                "cap": settings.fairness_cap, "window": settings.fairness_window,
                "window_step": STEP, "baseline_s": settings.fairness_baseline_s}
    document: dict[str, Any] = {
        "run": f"python3 -m benchmarks run fairness, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
               f"rota {str(info['rota_git_sha'])[:7]}, PostgreSQL {info['postgresql']}",
        "workload": workload, "machine": info.get("machine"), "stores": {}, "outcomes": {}}
    if out.exists():
        earlier = json.loads(out.read_text())
        if earlier.get("workload") == workload:
            for kind in earlier.get("outcomes", {}):
                if kind not in settings.fairness_stores:
                    document["outcomes"][kind] = earlier["outcomes"][kind]
                    document["stores"][kind] = earlier["stores"][kind]
    return document


def _measure(kind: str, model: str, settings: Settings) -> dict[str, Any]:
    lights = light_names(settings.fairness_light_tenants)
    load_before = os.getloadavg()[0]
    try:
        services, since, pass_lines = run_model(kind, model, settings)
    except TimeoutError as error:
        print(f"  fairness[{kind}] {model}: {error}", flush=True)
        return {"timed_out_s": settings.fairness_timeout_s, "load_1min": load_before}
    until = since + settings.fairness_baseline_s if model == BASELINE else None
    outcome = analyse(services, tenant_weights(model, lights), settings.fairness_window,
                      since, until)
    print(f"  fairness[{kind}] {model}: {len(services):,} jobs; light p50 "
          f"{_ms(outcome.p50_median_ms)} / {_ms(outcome.p50_worst_ms)} ms, p99 "
          f"{_ms(outcome.p99_median_ms)} / {_ms(outcome.p99_worst_ms)} ms (median / worst "
          f"tenant); worst window deviation heavy {outcome.heavy_worst_pp:.2f} pp, light "
          f"{outcome.light_worst_pp:.2f} pp over {outcome.windows:,} windows; backlog "
          f"{outcome.backlog_s:.1f} s, {outcome.jobs_per_s:,.0f} jobs/s; {outcome.gaps} "
          f"gaps of {1e3 * GAP_S:.0f} ms or more without a start (longest "
          f"{_ms(outcome.longest_gap_ms)} ms)", flush=True)
    passes = analyse_passes(pass_lines, services, since, until)
    if passes is not None:
        print(f"    {passes.passes:,} passes, {passes.jobs_each:.1f} jobs each, round trip p50 "
              f"{passes.p50_ms:.2f} ms, p99 {passes.p99_ms:.2f}; those that started a light "
              f"job: p50 {passes.light_p50_ms:.2f} ms, p99 {passes.light_p99_ms:.2f}",
              flush=True)
    return {**asdict(outcome), "passes": None if passes is None else asdict(passes),
            "load_1min": round((load_before + os.getloadavg()[0]) / 2, 1)}


def run(settings: Settings) -> SuiteResult:
    result = SuiteResult()
    out = ROOT / settings.fairness_json
    out.parent.mkdir(parents=True, exist_ok=True)
    document = _document(settings, out)
    for kind in settings.fairness_stores:
        why = RotaTarget(kind).unavailable()
        if why:
            result.skipped[f"fairness[{kind}]"] = why
            print(f"  fairness[{kind}]: skipped ({why})")
            continue
        document["stores"][kind] = {"at": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
                                    "heavy_jobs": settings.fairness_heavy_jobs,
                                    "light_period_s": settings.fairness_period_s}
        models = document["outcomes"][kind] = {}
        for model in MODELS:
            models[model] = outcome = _measure(kind, model, settings)
            out.write_text(json.dumps(document, indent=1) + "\n")  # kept if a later one fails
            if "timed_out_s" in outcome:
                continue
            subject = f"{model} [{kind}]"
            result.add("fairness", subject, "light p99 ms, median tenant",
                       Figure.of([outcome["p99_median_ms"]], "ms"))
            result.add("fairness", subject, "light p99 ms, worst tenant",
                       Figure.of([outcome["p99_worst_ms"]], "ms"))
            if outcome["windows"]:
                result.add("fairness", subject, "worst window dev pp, heavy / light",
                           Figure.of([max(outcome["heavy_worst_pp"],
                                          outcome["light_worst_pp"])], "pp"))
    print("\n" + table(document["outcomes"], settings.fairness_cap))
    print(f"wrote {out}")
    result.detail["fairness"] = document
    return result
