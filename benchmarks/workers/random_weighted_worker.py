"""The weights suite's baseline: Sidekiq's "random weighted" Queue selection on rota's own store.

For every slot of a pass, a Queue is drawn at random in proportion to its weight (among the
Queues not yet found empty in this pass); the slots drawn for each Queue are claimed with
one `store.claim` per Queue, exactly as a rota Weighted pass batches its claims, and the
jobs run in the order drawn. So the comparison with rota's Weighted groups is only about
the selection rule: same tables, same claim SQL, same batch size, same record of service.

Handlers are noops that write "queue start_time_ns" to BENCH_SERVED_FILE.
Usage: python -m benchmarks.workers.random_weighted_worker STORE_URL a=6,b=3,c=1 POOL
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from types import FrameType

from benchmarks.workers.rota_app import parse_weights
from rota.core.jobs import JobRecord
from rota.store import open_store

_stop = False


def _on_signal(_signum: int, _frame: FrameType | None) -> None:
    global _stop
    _stop = True


def draw_pass(
    rng: random.Random, weights: dict[str, int], slots: int, empty: set[str]
) -> list[str]:
    """`slots` Queues drawn independently in proportion to weight, skipping empty ones."""
    eligible = [q for q in weights if q not in empty]
    if not eligible:
        return []
    return rng.choices(eligible, weights=[weights[q] for q in eligible], k=slots)


def main(url: str, weights_text: str, pool: int) -> None:
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    weights = dict(parse_weights(weights_text))
    store = open_store(url)
    owner = f"random-weighted@{os.getpid()}"
    rng = random.Random()
    served = open(os.environ["BENCH_SERVED_FILE"], "a")  # noqa: SIM115
    idle_s = 0.0
    try:
        while not _stop:
            empty: set[str] = set()
            order: list[JobRecord] = []
            free = pool
            while free > 0:
                drawn = draw_pass(rng, weights, free, empty)
                if not drawn:
                    break
                by_queue: dict[str, list[JobRecord]] = {}
                for queue, wanted in Counter(drawn).items():
                    now = datetime.now(UTC)
                    jobs = store.claim([queue], wanted, now=now, owner=owner,
                                       lease_expires_at=now + timedelta(minutes=1))
                    by_queue[queue] = jobs
                    if len(jobs) < wanted:
                        empty.add(queue)
                for queue in drawn:  # dispatch in drawn order
                    if by_queue[queue]:
                        order.append(by_queue[queue].pop(0))
                free = pool - len(order)
            if not order:
                idle_s = min(0.2, idle_s * 2 or 0.005)
                time.sleep(idle_s)
                continue
            idle_s = 0.0
            for job in order:
                served.write(f"{job.queue} {time.time_ns()}\n")
            served.flush()
            store.complete([job.lease for job in order], datetime.now(UTC))
    finally:
        served.close()
        store.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
