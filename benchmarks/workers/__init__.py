"""Worker processes the suites start as subprocesses (rota's App, the random weighted
baseline), and what runs under a rota tree for `python -m benchmarks ab` (`rota_child`).
The peers' workers live with their targets (benchmarks.targets.peers).

Every worker registers two jobs: `noop` (does nothing) and `probe` (writes its pickup
latency, now minus the enqueue timestamp in its payload, with `record_pickup`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TextIO

_latency_file: TextIO | None = None


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


def read_pickups(path: Path, expected: int, label: str) -> list[float]:
    """The pickup latencies `record_pickup` wrote to `path`, in seconds, sorted (a warning
    when fewer than `expected` were recorded)."""
    text = path.read_text() if path.exists() else ""
    values = sorted(float(line) for line in text.split())
    if len(values) != expected:
        print(f"    warning: {label} recorded {len(values)} of {expected}")
    return values
