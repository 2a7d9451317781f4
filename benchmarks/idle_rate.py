"""Idle CPU of a worker whose only Queue is starved by its rate limit.

Runs one App in this process on a fresh SQLite file: a Queue with plenty of due jobs,
rated `--jobs` per `--per` seconds (burst 1), served by one group whose poll interval is
far longer than the gap between tokens. For `--seconds` it prints the CPU seconds the
process spent and the jobs that ran: a worker that sleeps until each next token runs about
one job per token and stays near zero CPU; one that polled busily would burn a core, and
one that only polled would run one job per poll interval. Prints figures, asserts nothing.

    .venv/bin/python benchmarks/idle_rate.py --seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import rota


def measure(seconds: float, jobs: int, per_s: float, poll_s: float, rated: bool) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        app = rota.App(store=f"sqlite:///{Path(scratch) / 'idle.db'}")
        ran: list[float] = []

        @app.job
        def tick() -> None:
            ran.append(time.monotonic())

        app.add_worker_group(rota.WorkerGroupOptions(
            name="g", policy=rota.Strict(["q"]), pool_size=4, poll_interval=poll_s))
        if rated:
            app.set_queue_rate("q", jobs, per=timedelta(seconds=per_s), burst=1)
            for _ in range(int(seconds / per_s * jobs) + 50):
                tick.configure(queue="q").enqueue()

        async def idle() -> None:
            async with app.serve():
                await asyncio.sleep(seconds)

        cpu, wall = time.process_time(), time.perf_counter()
        asyncio.run(idle())
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        app.close()
    what = (f"starved Queue, {jobs} per {per_s:g} s, burst 1" if rated
            else "no jobs at all")
    print(f"{what:<38} poll {poll_s:g} s: {wall:5.1f} s wall, {cpu:6.3f} s CPU "
          f"({cpu / wall:6.2%}), {len(ran)} jobs run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--per", type=float, default=0.5, help="seconds per --jobs tokens")
    parser.add_argument("--poll", type=float, default=5.0, help="the group's poll interval")
    args = parser.parse_args()
    measure(args.seconds, args.jobs, args.per, args.poll, rated=False)
    measure(args.seconds, args.jobs, args.per, args.poll, rated=True)


if __name__ == "__main__":
    main()
