"""Two Queue selection rules rota has no policy for, run on rota's own store for the
fairness suite, with the same pool of concurrent job slots as a `rota worker`:

- `random`: each free slot draws one tenant Queue uniformly at random among those with
  due work (Dramatiq / Sidekiq style: no weights, no memory of what each tenant got);
- `caps`: one FIFO order over every tenant's jobs, a tenant already running `cap` jobs
  skipped (the Oban Pro / River Pro partitioned global limit). Each pass walks the tenant
  Queues oldest head first: a Queue's head is the due time of the last job claimed from
  it while it stays non-empty, else the moment it was first seen with due work (jobs
  are due when enqueued, so that is its oldest job's age to within one pass); each Queue
  is asked for at most its room under the cap. One worker process, so the running
  counts it keeps are the global ones.

One claim in flight at a time, as a rota Worker Group: `store.claim(queues, free,
limits=..., probe=every tenant Queue, outcomes=the successes since the last claim)`, one
round trip per pass; `Claimed.due` says which Queues have due work left, and
`store.listen` hints at new enqueues while idle (a 100 ms poll as the safety net).

Handlers sleep BENCH_JOB_S (default 0.003) after appending "tenant enqueued_at
started_at" (time.time() seconds) to BENCH_SERVED_FILE, as the rota App's `tenant_job`.
Usage: python -m benchmarks.workers.tenant_worker STORE_URL random|caps QUEUES POOL CAP
(QUEUES comma-separated).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from rota.core.jobs import JobRecord, Lease
from rota.core.outcomes import Succeeded
from rota.store import open_store
from rota.store.base import Store

POLL_S = 0.1
LEASE = timedelta(minutes=5)


def plan_random(rng: random.Random, free: int, due: set[str]) -> list[tuple[str, int]]:
    """`free` slots, each drawn uniformly among the Queues with due work."""
    if not due or free <= 0:
        return []
    eligible = sorted(due)
    return list(Counter(rng.choice(eligible) for _ in range(free)).items())


def plan_caps(free: int, due: set[str], running: Counter[str], cap: int,
              head: dict[str, float]) -> list[tuple[str, int]]:
    """Oldest head first, each Queue asked for its room under `cap`, `free` in all."""
    asked: list[tuple[str, int]] = []
    for queue in sorted(due, key=lambda q: head.get(q, 0.0)):
        if free <= 0:
            break
        room = min(cap - running[queue], free)
        if room > 0:
            asked.append((queue, room))
            free -= room
    return asked


class TenantWorker:
    def __init__(self, store: Store, mode: str, queues: Sequence[str], pool: int,
                 cap: int, job_s: float, served_path: str) -> None:
        self.store = store
        self.mode = mode
        self.queues = list(queues)
        self.pool = pool
        self.cap = cap
        self.job_s = job_s
        self.owner = f"tenant-{mode}@{os.getpid()}"
        self.rng = random.Random()
        self.running: Counter[str] = Counter()  # Queue -> jobs running (this loop's task)
        self.tasks: set[asyncio.Task[None]] = set()
        self.succeeded: list[Lease] = []  # handed to the next claim
        self.due: set[str] = set(self.queues)  # unknown at start: every Queue probed
        self.head: dict[str, float] = {}
        self.served = open(served_path, "a")  # noqa: SIM115 - closed by run()
        self.stopping = False
        self.wake = asyncio.Event()

    def _claim(self, asked: list[tuple[str, int]], done: list[Lease]) -> list[JobRecord]:
        now = datetime.now(UTC)
        return self.store.claim(
            [q for q, _ in asked], sum(n for _, n in asked), now=now, owner=self.owner,
            lease_expires_at=now + LEASE, limits=[n for _, n in asked], probe=self.queues,
            outcomes=[(lease, Succeeded()) for lease in done])

    async def _job(self, job: JobRecord) -> None:
        tenant, enqueued_at = job.args[0], job.args[1]
        self.served.write(f"{tenant} {enqueued_at} {time.time():.6f}\n")
        await asyncio.sleep(self.job_s)
        self.running[job.queue] -= 1
        self.succeeded.append(job.lease)

    def _plan(self) -> list[tuple[str, int]]:
        free = self.pool - len(self.tasks)
        if self.mode == "random":
            return plan_random(self.rng, free, self.due)
        return plan_caps(free, self.due, self.running, self.cap, self.head)

    async def _pass(self) -> bool:
        """One claim if there is anything to ask or to report; whether it leased a job."""
        asked = self._plan() if not self.stopping else []
        if not asked and not self.succeeded:
            return False
        done, self.succeeded = self.succeeded, []
        claimed = await asyncio.to_thread(self._claim, asked, done)
        seen_at = time.time()
        due = set(getattr(claimed, "due", ()))
        for queue in due - self.due:
            self.head[queue] = seen_at
        self.due = due
        for job in claimed:
            self.head[job.queue] = job.due_at.timestamp()
            self.running[job.queue] += 1
            task = asyncio.create_task(self._job(job))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        self.served.flush()
        return bool(claimed)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self._stop)
        loop.add_signal_handler(signal.SIGINT, self._stop)

        def hinted(queue: str) -> None:
            loop.call_soon_threadsafe(self._hint, queue)

        stop_listening = self.store.listen(hinted) if hasattr(self.store, "listen") else None
        try:
            while not self.stopping or self.tasks or self.succeeded:
                if await self._pass():
                    continue
                self.wake.clear()
                waker = asyncio.create_task(self.wake.wait())
                finished, _ = await asyncio.wait({waker, *self.tasks}, timeout=POLL_S,
                                                 return_when=asyncio.FIRST_COMPLETED)
                waker.cancel()
                if not finished:  # the poll: ask every Queue again
                    self.due = set(self.queues)
        finally:
            if stop_listening is not None:
                stop_listening()
            self.served.close()
            self.store.close()

    def _hint(self, queue: str) -> None:
        if queue in self.head or queue in self.queues:
            if queue not in self.due:
                self.head[queue] = time.time()
            self.due.add(queue)
        self.wake.set()

    def _stop(self) -> None:
        self.stopping = True
        self.wake.set()


def main(url: str, mode: str, queues_text: str, pool: int, cap: int) -> None:
    if mode not in ("random", "caps"):
        raise SystemExit(f"mode is random or caps; got {mode!r}")
    worker = TenantWorker(open_store(url), mode, queues_text.split(","), pool, cap,
                          float(os.environ.get("BENCH_JOB_S", "0.003")),
                          os.environ["BENCH_SERVED_FILE"])
    asyncio.run(worker.run())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
