"""Wait until a store shows no unfinished job, watching that the worker stays alive."""

from __future__ import annotations

import time
from collections.abc import Callable

from benchmarks.processes import WorkerProcess


class WorkerDied(RuntimeError):
    pass


def wait_drained(
    unfinished: Callable[[], int], workers: list[WorkerProcess], timeout_s: float,
    poll_s: float, below: int = 1,
) -> float:
    """Poll until unfinished() < below (default: 0 left); return the perf_counter() time
    that was first seen.

    Raises:
        WorkerDied: a worker exited first (its log tail is in the message).
        TimeoutError: still unfinished work after `timeout_s`.
    """
    deadline = time.perf_counter() + timeout_s
    while True:
        left = unfinished()
        seen_at = time.perf_counter()
        if left < below:
            return seen_at
        for worker in workers:
            if not worker.alive():
                raise WorkerDied(f"worker {worker.label} exited ({worker.popen.returncode}) "
                                 f"with {left} jobs left:\n{worker.tail()}")
        if seen_at > deadline:
            raise TimeoutError(f"{left} jobs still unfinished after {timeout_s:.0f} s")
        time.sleep(poll_s)
