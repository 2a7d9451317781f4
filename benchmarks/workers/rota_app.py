"""rota's benchmark App, run by `rota worker benchmarks.workers.rota_app:app`.

Environment:
    ROTA_BENCH_STORE   the store URL (postgresql://... or sqlite:///...)
    ROTA_BENCH_POLICY  "strict" (default: one Worker Group, Strict over Queue "bench"),
                       "weighted:a=6,b=3,c=1" (one group, Weighted over those Queues) or
                       "tenants:N" (one group, Weighted over Queues t00000... of weights 1-5,
                       as in benchmarks.suites.queues)
    ROTA_BENCH_POOL    pool_size (default 20)
    BENCH_LATENCY_FILE where `probe` writes pickup latencies (`labelled_probe`: "LABEL
                       SECONDS" lines, families)
    BENCH_SOAK_FILE    where `soak` writes its enqueue, start and end times (soak)
    BENCH_SERVED_FILE  where `served` writes "queue start_time_ns" lines (weights), and
                       `tenant_job` "tenant enqueued_at started_at" lines (fairness)
    BENCH_JOB_S        how long `tenant_job` sleeps (default 0.003)
    BENCH_PASS_FILE    where the worker writes one "end_time round_trip_s jobs" line per pass
                       that claimed jobs, when it stops (fairness)
    BENCH_MEMBERS_FILE where the worker writes one "group members" line per group when it
                       stops: how many Queue family members its group holds (families)
    BENCH_SCHEDULE_S   if set, a schedule `tick` that enqueues `noop` every that many
                       seconds (maintenance)
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import TextIO

import rota
from benchmarks.workers import record_labelled_pickup, record_pickup, soak_work

QUEUE = "bench"


def parse_weights(text: str) -> list[tuple[str, int]]:
    """"a=6,b=3,c=1" -> [("a", 6), ("b", 3), ("c", 1)]."""
    pairs = []
    for item in text.split(","):
        queue, weight = item.split("=")
        pairs.append((queue.strip(), int(weight)))
    return pairs


def tenant_queue(number: int) -> str:
    return f"t{number:05d}"


def make_app(store_url: str, policy_text: str = "strict", pool_size: int = 20) -> rota.App:
    app = rota.App(store_url)
    served_file: list[TextIO] = []

    @app.job("noop", queue=QUEUE)
    async def noop() -> None:
        return None

    @app.job("probe", queue=QUEUE)
    async def probe(ts: float, rec: bool) -> None:
        record_pickup(ts, rec)

    @app.job("labelled_probe", queue=QUEUE)
    async def labelled_probe(ts: float, label: str) -> None:
        record_labelled_pickup(ts, label)

    @app.job("soak", queue=QUEUE)
    async def soak(ts: float) -> None:
        await soak_work(ts)

    @app.job("served", queue=QUEUE)
    async def served(queue: str) -> None:
        started_ns = time.time_ns()
        if not served_file:
            served_file.append(open(os.environ["BENCH_SERVED_FILE"], "a"))  # noqa: SIM115
        served_file[0].write(f"{queue} {started_ns}\n")
        served_file[0].flush()

    job_s = float(os.environ.get("BENCH_JOB_S", "0.003"))

    @app.job("tenant_job", queue=QUEUE)
    async def tenant_job(tenant: str, enqueued_at: float) -> None:
        started_at = time.time()
        if not served_file:
            served_file.append(open(os.environ["BENCH_SERVED_FILE"], "a"))  # noqa: SIM115
        served_file[0].write(f"{tenant} {enqueued_at} {started_at:.6f}\n")
        served_file[0].flush()
        await asyncio.sleep(job_s)

    policy: rota.DispatchPolicy
    if policy_text.startswith("weighted:"):
        policy = rota.Weighted(parse_weights(policy_text.removeprefix("weighted:")))
    elif policy_text.startswith("tenants:"):
        count = int(policy_text.removeprefix("tenants:"))
        policy = rota.Weighted([(tenant_queue(i), 1 + i % 5) for i in range(count)])
    else:
        policy = rota.Strict(QUEUE)
    app.add_worker_group(rota.WorkerGroupOptions(name="bench", policy=policy,
                                                 pool_size=pool_size))
    if "BENCH_SCHEDULE_S" in os.environ:
        app.schedule("tick", "noop", every=float(os.environ["BENCH_SCHEDULE_S"]))
    if "BENCH_PASS_FILE" in os.environ:
        app._observe_runtimes(PassLog(os.environ["BENCH_PASS_FILE"]))
    if "BENCH_MEMBERS_FILE" in os.environ:
        app._observe_runtimes(MembersLog(os.environ["BENCH_MEMBERS_FILE"]))
    return app


class MembersLog:
    """A runtime observer that writes, when the runtime stops, how many Queue family
    members each of its groups holds ("group members" lines): what the group learnt from
    hints and surveys, not what the store knows."""

    def __init__(self, path: str) -> None:
        self.path = path

    def runtime_started(self, runtime: object, /) -> None:
        pass

    def runtime_stopped(self, runtime: object, /) -> None:
        groups = getattr(runtime, "groups", [])
        with open(self.path, "w") as out:
            out.writelines(f"{group.runner.name} {len(group.runner.membership.members)}\n"
                           for group in groups)

    def claimed(self, group: str, round_trip_s: float, jobs: int, /) -> None:
        pass

    def job_ran(self, group: str, queue: str, ran_s: float, /) -> None:
        pass


class PassLog:
    """A runtime observer keeping every pass that claimed jobs (when it ended, its round
    trip from the event loop, its jobs) in memory, written out when the runtime stops."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.passes: list[tuple[float, float, int]] = []

    def runtime_started(self, runtime: object, /) -> None:
        pass

    def runtime_stopped(self, runtime: object, /) -> None:
        with open(self.path, "w") as out:
            out.writelines(f"{end:.6f} {trip_s:.6f} {jobs}\n" for end, trip_s, jobs in self.passes)

    def claimed(self, group: str, round_trip_s: float, jobs: int, /) -> None:
        if jobs:
            self.passes.append((time.time(), round_trip_s, jobs))

    def job_ran(self, group: str, queue: str, ran_s: float, /) -> None:
        pass


def _from_environment() -> rota.App | None:
    url = os.environ.get("ROTA_BENCH_STORE")
    if url is None:
        return None
    return make_app(url, os.environ.get("ROTA_BENCH_POLICY", "strict"),
                    int(os.environ.get("ROTA_BENCH_POOL", "20")))


app = _from_environment()
