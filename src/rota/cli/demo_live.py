"""The live part both demos share: run the App's groups for a while with bars on screen.

`rota demo` (rota.cli.demo) and `rota demo --tenants N` (rota.cli.demo_tenants) differ
in what they enqueue and report, not in how they run: both call `serve_live`. A module
of its own, so that the two demos import it and not each other.
Imports the public API and rich.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

from rich.progress import Progress

import rota


class Timed(Protocol):
    began: float  # time.monotonic() when the groups started


async def serve_live(
    app: rota.App, progress: Progress, seconds: float, timed: Timed,
    refresh: Callable[[], None],
) -> float:
    """Run the App's groups for `seconds` with `progress` on screen, `refresh()` ten
    times a second and once at the end; set `timed.began` as they start. Returns the
    seconds they ran."""
    with progress:
        async with app.serve(grace=1):
            timed.began = time.monotonic()
            deadline = timed.began + seconds
            while (left := deadline - time.monotonic()) > 0:
                refresh()
                await asyncio.sleep(min(0.1, left))  # the refresh rate of the bars
            refresh()
        return time.monotonic() - timed.began
