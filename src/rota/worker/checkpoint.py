"""The WAL checkpoint duty: while a worker runs on an SQLite store, keep its -wal file small.

SQLite folds the write-ahead log back into the database on commits (`wal_autocheckpoint`),
but only as far as readers allow, and only when someone commits: under a busy drain with
several processes the WAL grew to 15 MiB and stayed that big, and on a nearly full disk a
store then needs that much free space to recover (docs/stores.md, "Disk space"). So the
elected maintenance worker (rota.worker.leadership: the WAL is the database's, one process
folds it back for all) asks the store for a PASSIVE checkpoint (it never waits for readers or
writers) every `CHECKPOINT_INTERVAL_S`; once the whole WAL is folded back, the next write
starts it over, truncated to 4 MiB.

A duty of its own, beside the runtime (`Runtime(duties=...)`: one task per runtime,
started and cancelled by it; the App adds it for a store that keeps a WAL).
It survives any exception: the first failure of a streak is logged at ERROR with its
traceback, later ones at DEBUG, and it backs off (doubling, up to `MAX_BACKOFF_S`) and goes
on. Imports asyncio, logging, the store contract and the duty protocol only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from rota.core.plurals import counted
from rota.store.base import Store, WalCheckpointing
from rota.worker.duty import Duty, DutyRuntime

logger = logging.getLogger("rota.worker.checkpoint")

# Read at each step, so that tests may shorten them.
CHECKPOINT_INTERVAL_S = 10.0
MAX_BACKOFF_S = 300.0

# Runs a blocking store call off the event loop (the runtime's `store_call`).
StoreCall = Callable[[Callable[[], int]], Awaitable[int]]


def wal_checkpoint_duty(
    store: Store,
) -> Duty | None:
    """The duty for `store` if it keeps a WAL (a `Runtime` duty); None otherwise."""
    if not isinstance(store, WalCheckpointing):
        return None
    checkpointing: WalCheckpointing = store

    async def duty(runtime: DutyRuntime) -> None:
        await checkpoint_forever(checkpointing, runtime.store_call, store.url)

    return duty


async def checkpoint_forever(store: WalCheckpointing, store_call: StoreCall, url: str) -> None:
    """Checkpoint every CHECKPOINT_INTERVAL_S until cancelled, whatever goes wrong."""
    failures = 0
    delay_s = CHECKPOINT_INTERVAL_S
    while True:
        await asyncio.sleep(delay_s)
        try:
            left = await store_call(store.checkpoint_wal)
        except Exception:
            failures += 1
            delay_s = min(CHECKPOINT_INTERVAL_S * 2 ** min(failures, 16), MAX_BACKOFF_S)
            if failures == 1:
                logger.error("WAL checkpoint of %s failed; retrying in %.0f s (the WAL may "
                             "grow meanwhile)", url, delay_s, exc_info=True)
            else:
                logger.debug("WAL checkpoint of %s failed again (%d in a row); retrying in "
                             "%.0f s", url, failures, delay_s, exc_info=True)
            continue
        if failures:
            logger.warning("WAL checkpoint of %s works again after %s", url,
                           counted(failures, "failure"))
        failures = 0
        delay_s = CHECKPOINT_INTERVAL_S
        if left:
            logger.debug("WAL checkpoint of %s: %d pages still in use by readers", url, left)
