"""The probe handlers' side of the latency suite: one line per recorded job, flushed at
once, so a worker that is then stopped with SIGTERM has lost nothing."""

from __future__ import annotations

import os
import time
from typing import TextIO

_file: TextIO | None = None


def record_pickup(enqueued_at: float, record: bool) -> None:
    """Call first thing in a probe handler with the payload's time.time() stamp."""
    picked_up_at = time.time()
    if not record:
        return
    global _file
    if _file is None:
        _file = open(os.environ["BENCH_LATENCY_FILE"], "a")  # noqa: SIM115 - kept open
    _file.write(f"{picked_up_at - enqueued_at:.6f}\n")
    _file.flush()
