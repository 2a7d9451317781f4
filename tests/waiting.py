"""Waiting in tests for what only polling can see (another process's writes, a store's
rows, a counter another thread moves): poll a condition until it holds, always under a
deadline. Where an event or the virtual clock can say it, tests wait on those instead."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


def wait_until(condition: Callable[[], bool], timeout_s: float, *, poll_s: float = 0.05,
               tick: Callable[[], None] | None = None) -> bool:
    """Poll `condition` until it holds or `timeout_s` passed; `tick` runs every round (a
    supervisor's check, say). Returns whether the condition held: assert it."""
    deadline = time.monotonic() + timeout_s
    while True:
        if tick is not None:
            tick()
        if condition():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(poll_s)  # the polling interval; the deadline above is the bound


async def until(condition: Callable[[], bool], timeout_s: float, *,
                poll_s: float = 0.02, off_loop: bool = True) -> None:
    """Await `condition` until it holds; it runs off the event loop's thread (a store
    read may block), or on it with `off_loop=False` (it reads state the loop owns).
    Raises TimeoutError after `timeout_s`."""
    async def holds() -> bool:
        return await asyncio.to_thread(condition) if off_loop else condition()

    async def poll() -> None:
        while not await holds():
            await asyncio.sleep(poll_s)

    await asyncio.wait_for(poll(), timeout_s)
