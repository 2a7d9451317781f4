"""Worker processes the suites start as subprocesses (rota's App, the random weighted
baseline), and what runs under a rota tree for `python -m benchmarks ab` (`rota_child`).
The peers' workers live with their targets (benchmarks.targets.peers).

Every worker registers two jobs: `noop` (does nothing) and `probe` (writes its pickup
latency, now minus the enqueue timestamp in its payload, with `record_pickup`); and `soak`
(`soak_work`: ~1 ms of work, then a record of its enqueue, start and end times).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import TextIO

_latency_file: TextIO | None = None
_soak_file: TextIO | None = None
SOAK_WORK_S = 0.001


def record_pickup(enqueued_at: float, record: bool) -> None:
    """Call first thing in a probe handler with the payload's time.time() stamp: one line
    per recorded job in the file named by BENCH_LATENCY_FILE, flushed at once, so that a
    worker then stopped with SIGTERM has lost nothing."""
    picked_up_at = time.time()
    if not record:
        return
    global _latency_file
    if _latency_file is None:
        _latency_file = open(os.environ["BENCH_LATENCY_FILE"], "a")  # noqa: SIM115 - kept open
    _latency_file.write(f"{picked_up_at - enqueued_at:.6f}\n")
    _latency_file.flush()


def record_labelled_pickup(enqueued_at: float, label: str) -> None:
    """`record_pickup` for probes of several kinds in one run: one line "LABEL SECONDS" per
    job in the file named by BENCH_LATENCY_FILE, flushed at once (the families suite)."""
    picked_up_at = time.time()
    global _latency_file
    if _latency_file is None:
        _latency_file = open(os.environ["BENCH_LATENCY_FILE"], "a")  # noqa: SIM115 - kept open
    _latency_file.write(f"{label} {picked_up_at - enqueued_at:.6f}\n")
    _latency_file.flush()


def read_labelled_pickups(path: Path) -> dict[str, list[float]]:
    """The pickup latencies `record_labelled_pickup` wrote to `path`, in seconds, sorted,
    by label (a missing file: none)."""
    found: dict[str, list[float]] = {}
    text = path.read_text() if path.exists() else ""
    for line in text.splitlines():
        label, seconds = line.split()
        found.setdefault(label, []).append(float(seconds))
    return {label: sorted(values) for label, values in found.items()}


def read_pickups(path: Path, expected: int, label: str) -> list[float]:
    """The pickup latencies `record_pickup` wrote to `path`, in seconds, sorted (a warning
    when fewer than `expected` were recorded)."""
    text = path.read_text() if path.exists() else ""
    values = sorted(float(line) for line in text.split())
    if len(values) != expected:
        print(f"    warning: {label} recorded {len(values)} of {expected}")
    return values


async def soak_work(enqueued_at: float) -> None:
    """The soak suite's job, alike in every library: ~1 ms of work (a sleep, so that a pool
    of 20 runs jobs side by side as I/O-bound jobs do), then one line "enqueued started
    finished" (time.time() stamps; `enqueued_at` is the producer's, taken just before its
    enqueue call) in the file named by BENCH_SOAK_FILE, flushed at once. Written at the
    end, so a line is a completed job and its start is its pickup, as record_pickup's."""
    started_at = time.time()
    await asyncio.sleep(SOAK_WORK_S)
    global _soak_file
    if _soak_file is None:
        _soak_file = open(os.environ["BENCH_SOAK_FILE"], "a")  # noqa: SIM115 - kept open
    _soak_file.write(f"{enqueued_at:.6f} {started_at:.6f} {time.time():.6f}\n")
    _soak_file.flush()
