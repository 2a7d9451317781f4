"""queues: thousands of tenant Queues under one Weighted group.

For 1 to 10,000 Queues (1 %, 10 % and 100 % of them backlogged), on every store (memory,
SQLite, PostgreSQL), one Weighted group (pool 20, weights 1-5 by Queue number) drains a
backlog of noop jobs with `App.run_until_idle()` (in process, VirtualClock), and the
suite reports, side by side with the single-Queue drain of the same store in the same
run:

- drain rate (jobs/s) and its ratio to the single-Queue rate;
- store round trips per job (`claim` calls: claims, batched claims and probes alone) and
  logical claims per job (one per Queue asked of the store in a pass; a Queue that the
  group already knows is empty is answered without the store and not counted);
- planning: the pure planner's time (`Dispatcher.begin_pass` and the `PassPlan` calls),
  as a share of the drain's: the planner calls of one more drain of the same
  configuration are recorded and replayed alone on a fresh dispatcher (`PlannerLog`), so
  no timer runs inside the measured drain (a per-call timer cost ~1 us a call itself).

The total backlog per configuration is fixed (`--jobs`, default 10,000), spread evenly over
the backlogged Queues, so every row drains the same number of jobs; each row is measured
right after a single-Queue drain of the same store and count, and its ratio is to that one.

Run: `python3 -m benchmarks.suites.queues [--quick] [--stores memory,sqlite,postgres]
[--json PATH] [--plot PNG]` (needs only rota's own .venv; the plot needs matplotlib), or
as the `queues` suite of `python3 -m benchmarks run --suite queues`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import rota
from benchmarks.workers.rota_child import replay_calls
from rota.core import dispatch
from rota.core.dispatch.plan import PassPlan
from rota.core.dispatch.weighted import WeightedPass
from rota.core.jobs import JobRecord, NewJob
from rota.store import open_store
from rota.store.base import Store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
POOL = 20
# Replays of a drain's planner calls timed for its planning figure, the least kept: with
# three, one configuration's planning (the same calls on memory and SQLite) read 7.8 and
# 12.4 us a job in one run; a replay costs ~0.1 s at 10,000 Queues.
REPLAYS = 9
# (Queues, backlogged Queues): 1 to 10,000 Queues, 1 %, 10 % and 100 % backlogged.
CONFIGS: tuple[tuple[int, int], ...] = (
    (1, 1), (10, 10), (100, 1), (100, 10), (100, 100),
    (1_000, 10), (1_000, 100), (1_000, 1_000),
    (10_000, 100), (10_000, 1_000), (10_000, 10_000),
)
QUICK_CONFIGS: tuple[tuple[int, int], ...] = (
    (1, 1), (100, 1), (1_000, 10), (1_000, 1_000), (10_000, 100), (10_000, 10_000))


@dataclass(frozen=True, slots=True)
class Measure:
    store: str
    queues: int
    backlogged: int
    jobs: int
    seconds: float
    round_trips: int
    probes: int
    logical_claims: int
    planning_s: float

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.seconds

    def as_json(self) -> dict[str, object]:
        return {**asdict(self), "jobs_per_s": self.jobs_per_s}


class CountingStore:
    """Delegates to a real store; counts `claim` round trips, probes and logical claims."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.round_trips = 0
        self.probes = 0
        self.logical_claims = 0

    def claim(self, queues: Sequence[str], limit: int, **kwargs: Any) -> list[JobRecord]:
        self.round_trips += 1
        if kwargs.get("probe") and not queues:
            self.probes += 1  # a probe alone (a claim may also probe its own Queues)
        limits = kwargs.get("limits")
        self.logical_claims += len(limits) if limits is not None else (1 if queues else 0)
        return self.inner.claim(queues, limit, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class PlannerLog:
    """Records every call a drain makes into the Weighted planner (`begin_pass` and the
    pass plan's methods, with their arguments), so that `replay` can time the planner
    alone: the same calls, in the same order, on a fresh dispatcher, nothing else in
    between. Timing each call inside the drain instead (a perf_counter wrapper) cost ~1 us
    a call itself, more than the one-Queue planner's whole work per job."""

    METHODS = ("next_claims", "claimed", "probed", "claim_failed", "cut_short",
               "dispatch_order", "serve", "skip")
    ROUNDS = ("round_trip", "record_round")  # (PassPlan's own, shared with Strict)

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.orders: list[int] = []  # each pass's dispatched count, to check the replay
        self._depth = 0

    def _recorder(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        calls = self.calls

        def recorded(target: Any, *args: Any, **kwargs: Any) -> Any:
            if self._depth:  # a call the planner makes itself (record_round -> claimed)
                return function(target, *args, **kwargs)
            calls.append((name, args, kwargs))
            self._depth += 1
            try:
                result = function(target, *args, **kwargs)
            finally:
                self._depth -= 1
            if name == "dispatch_order":
                self.orders.append(len(result))
            return result

        return recorded

    @contextmanager
    def installed(self) -> Iterator[PlannerLog]:
        saved: list[tuple[type, str, Any]] = []
        for cls, names in ((WeightedPass, self.METHODS), (PassPlan, self.ROUNDS),
                           (dispatch.WeightedDispatcher, ("begin_pass",))):
            for name in names:
                original = cls.__dict__[name]
                saved.append((cls, name, original))
                setattr(cls, name, self._recorder(name, original))
        try:
            yield self
        finally:
            for cls, name, original in saved:
                setattr(cls, name, original)

    def replay(self, policy: rota.Weighted) -> float:
        """Seconds the planner takes to make the logged calls again on a fresh dispatcher
        (the loop's own dispatch included: an upper bound)."""
        dispatcher = dispatch.for_policy(policy, remember_empty=True)
        start = time.perf_counter()
        orders = replay_calls(dispatcher, self.calls)
        seconds = time.perf_counter() - start
        if orders != self.orders:
            raise RuntimeError("the replay did not dispatch what the drain dispatched")
        return seconds


def policy_for(queues: int) -> rota.Weighted:
    return rota.Weighted([(f"t{i:05d}", 1 + i % 5) for i in range(queues)])


def backlogged_queues(queues: int, backlogged: int) -> list[str]:
    step = queues // backlogged
    return [f"t{i:05d}" for i in range(0, queues, step)][:backlogged]


@contextmanager
def store_url(kind: str, label: str) -> Iterator[str]:
    """A fresh store of `kind` (memory, sqlite, postgres: database `<label>_bench`),
    removed afterwards."""
    if kind == "memory":
        yield "memory://"
    elif kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="rota-queues-") as folder:
            yield f"sqlite:///{folder}/queues.db"
    else:
        from benchmarks import pg

        name = f"{label}_bench"
        url = pg.fresh_database(name)
        try:
            yield url
        finally:
            pg.drop_database(name)


def measure(
    kind: str, queues: int, backlogged: int, total_jobs: int, *, log: PlannerLog | None = None,
) -> Measure:
    """Drain `total_jobs` over `backlogged` of `queues` Queues; with `log`, record the
    planner's calls instead of timing anything (see PlannerLog).

    The jobs are enqueued round-robin over the backlogged Queues, as tenants' work
    arrives: on SQLite a claim's cost is mostly the pages it touches, and one tenant's
    whole backlog enqueued in one block sits in a few pages, so a pass claiming one job
    from each of 20 such blocks touched 20 pages where the one-Queue drain touched one
    (a 20-Queue claim measured 0.7-1.2 ms against 0.2-0.4 ms; both 0.4-0.7 ms with the
    jobs interleaved)."""
    per_queue = max(1, total_jobs // backlogged)
    names = backlogged_queues(queues, backlogged)
    with store_url(kind, f"queues_{queues}_{backlogged}") as url:
        inner = open_store(url)
        try:
            jobs = [NewJob(name="noop", queue=queue, due_at=T0)
                    for _ in range(per_queue) for queue in names]
            for first in range(0, len(jobs), 5_000):
                inner.enqueue(jobs[first:first + 5_000], T0)
            if kind == "postgres":
                from benchmarks import pg

                pg.analyze(url)
            counting = CountingStore(inner)
            app = rota.App(counting, clock=rota.VirtualClock(T0))
            app.job("noop")(lambda: None)
            app.add_worker_group(rota.WorkerGroupOptions(
                name="tenants", policy=policy_for(queues), pool_size=POOL))
            with log.installed() if log is not None else contextlib.nullcontext():
                start = time.perf_counter()
                ran = app.run_until_idle()
                seconds = time.perf_counter() - start
            if ran != len(jobs):
                raise RuntimeError(f"drained {ran} of {len(jobs)} jobs")
            return Measure(kind, queues, backlogged, ran, seconds, counting.round_trips,
                           counting.probes, counting.logical_claims, 0.0)
        finally:
            inner.close()


def planning_seconds(kind: str, queues: int, backlogged: int, total_jobs: int) -> float:
    """The planner's own time for one drain: the drain once more, its planner calls
    recorded, then replayed alone (PlannerLog), the least of `REPLAYS` replays. The
    drains are deterministic (one group, VirtualClock), so this is the planner work of
    every drain of that configuration, on every store (the calls are the same)."""
    log = PlannerLog()
    measure(kind, queues, backlogged, total_jobs, log=log)
    return min(log.replay(policy_for(queues)) for _ in range(REPLAYS))  # least disturbed


def run_all(
    kinds: Sequence[str], configs: Sequence[tuple[int, int]], total_jobs: int,
    repeat: int = 1,
) -> list[tuple[Measure, Measure]]:
    """Each configuration right after a single-Queue drain of the same store and job count
    (the machine is shared and its load drifts: a ratio of two drains minutes apart says
    little), alternating, best of `repeat` each. Returns (single-Queue, configuration)."""
    results: list[tuple[Measure, Measure]] = []
    for kind in kinds:
        for queues, backlogged in configs:
            singles: list[Measure] = []
            gots: list[Measure] = []
            for _ in range(repeat):
                singles.append(measure(kind, 1, 1, total_jobs))
                gots.append(measure(kind, queues, backlogged, total_jobs))
            single = max(singles, key=lambda m: m.jobs_per_s)
            got = max(gots, key=lambda m: m.jobs_per_s)
            single = replace(single, planning_s=planning_seconds(kind, 1, 1, total_jobs))
            got = replace(got, planning_s=planning_seconds(kind, queues, backlogged,
                                                           total_jobs))
            results.append((single, got))
            print(f"  {kind:8} {queues:>6,} Queues ({backlogged:>6,} backlogged): "
                  f"{got.jobs:>6,} jobs {got.jobs_per_s:>8,.0f} jobs/s, 1 Queue "
                  f"{single.jobs_per_s:>8,.0f}: {got.jobs_per_s / single.jobs_per_s:5.0%}  "
                  f"{got.round_trips / got.jobs:5.3f} round trips/job "
                  f"({got.probes} probes)  {got.logical_claims / got.jobs:5.3f} claims/job  "
                  f"planning {got.planning_s / got.seconds:5.1%} "
                  f"{got.planning_s / got.jobs * 1e6:5.2f} us/job (1 Queue "
                  f"{single.planning_s / single.seconds:4.1%} "
                  f"{single.planning_s / single.jobs * 1e6:4.2f} us/job)", flush=True)
    return results


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.suites.queues",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer configurations and jobs")
    parser.add_argument("--stores", default="memory,sqlite,postgres")
    parser.add_argument("--jobs", type=int, default=None,
                        help="jobs per configuration (default 10,000)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="drains per row, alternating with the single-Queue one; "
                        "the best of each is kept (default 1)")
    parser.add_argument("--json", type=Path, help="write the figures as JSON here")
    parser.add_argument("--plot", type=Path, help="write a PNG plot here (matplotlib; "
                        "`python -m benchmarks chart queues JSON` draws an earlier --json)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    kinds = [kind.strip() for kind in args.stores.split(",") if kind.strip()]
    configs = QUICK_CONFIGS if args.quick else CONFIGS
    total = args.jobs or 10_000
    print(f"queues: pool {POOL}, weights 1-5, {total:,} jobs per configuration, "
          f"stores {', '.join(kinds)}, best of {args.repeat}", flush=True)
    rows = [{"single": single.as_json(), "tenants": m.as_json()}
            for single, m in run_all(kinds, configs, total, args.repeat)]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    if args.plot:
        from benchmarks import chart

        chart.queues(rows, args.plot)
        print(f"plot: {args.plot}")
    return 0


def run(settings: Any) -> Any:
    """The `queues` suite of `python3 -m benchmarks run`: rota only (no peer has tenant
    Queues under one fair group), every store, full or quick configurations."""
    from benchmarks.results import Figure, SuiteResult

    quick = settings.drain_jobs < 100_000
    results = run_all(["memory", "sqlite", "postgres"], QUICK_CONFIGS if quick else CONFIGS,
                      10_000)
    suite = SuiteResult()
    for _single, m in results:
        subject = f"rota[{m.store}] {m.queues:,} Queues ({m.backlogged:,} backlogged)"
        suite.add("queues", subject, "jobs/s", Figure.of([m.jobs_per_s], "jobs/s",
                                                         f"{m.jobs:,} jobs"))
    suite.detail["queues"] = [
        {"single": single.as_json(), "tenants": m.as_json()} for single, m in results]
    return suite


if __name__ == "__main__":
    raise SystemExit(main())
