"""Supervision: every long-lived task of the runtime survives any exception.

`supervise(what, run)` is the one wrapper every duty of the runtime is started with (a
group's passes, heartbeats and outcome writer, the lease sweeper, and any later duty). It
runs `run()`; when that returns, the duty is over. When it raises anything but
cancellation (a `StoreError` a duty did not handle, a bug, a store that raised
`KeyError`...), the exception is logged once at ERROR with its traceback, the duty waits a
backoff (50 ms doubling to 5 s; back to 50 ms after a run that lasted longer than the cap)
and `run()` is called again. So one bad row or one unexpected error never silently ends
crash recovery or heartbeats for the rest of the process's life.

Duties write `run()` so that starting it again is always safe: their state lives on their
objects, not in the coroutine's locals.

Imports only the standard library.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

logger = logging.getLogger("rota")

RESTART_FIRST_S = 0.05
RESTART_CAP_S = 5.0


async def supervise(
    what: str,
    run: Callable[[], Awaitable[None]],
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Run the duty `run()` until it returns, restarting it after any exception.

    Args:
        what: the duty, for the log (`"group emails: heartbeats"`).
        run: starts the duty; safe to call again after it raised.
        sleep: waits the backoff; the runtime passes one that returns early at shutdown.
    """
    loop = asyncio.get_running_loop()
    delay_s = RESTART_FIRST_S
    while True:
        began = loop.time()
        try:
            await run()
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            if loop.time() - began > RESTART_CAP_S:
                delay_s = RESTART_FIRST_S  # it ran fine for a while: a new failure
            logger.exception("%s failed unexpectedly; restarting it in %.2f s", what, delay_s)
        await sleep(delay_s)
        delay_s = min(delay_s * 2, RESTART_CAP_S)
