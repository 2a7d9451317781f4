"""Retrying rota's own transactions on PostgreSQL after a deadlock (SQLSTATE 40P01) or a
serialisation failure (40001).

The server rolls the whole transaction back before it reports either, so running the
same statement, or the same transaction from its BEGIN, again is safe and usually
succeeds: the other transaction has gone on meanwhile. `retried` does that a bounded
number of times, after short growing waits with jitter (two transactions that deadlocked
should not meet again at once), and stops early rather than pass the calling thread's
store-call deadline (rota.store.deadlines). Every statement path of the store that owns
its transaction goes through it; a caller's own connection (`enqueue_on`) never does: the
caller's transaction was aborted with the statement, and only the caller can retry it.

Imports the store contract and the store-call deadlines.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Final, TypeVar

from rota.store.base import StoreError
from rota.store.deadlines import deadline_at

log = logging.getLogger(__name__)

T = TypeVar("T")

# deadlock_detected and serialization_failure: the transaction was rolled back whole.
RETRIED_SQLSTATES: Final = frozenset({"40P01", "40001"})
# How many times a transaction is run in all before its error reaches the caller.
TRIES: Final = 5
# The wait before the second try; each later wait doubles (at most 10+20+40+80 ms in all,
# each cut by up to half at random).
FIRST_WAIT_S: Final = 0.010


def rolled_back(error: BaseException) -> str | None:
    """The SQLSTATE of `error` (a StoreError from a statement, or the psycopg error) when
    the server rolled its transaction back for a deadlock or a serialisation failure."""
    cause = error.__cause__ if isinstance(error, StoreError) else error
    sqlstate = getattr(cause, "sqlstate", None)
    return sqlstate if sqlstate in RETRIED_SQLSTATES else None


def retried(run: Callable[[], T], *, tries: int = TRIES, first_wait_s: float = FIRST_WAIT_S,
            sleep: Callable[[float], None] = time.sleep) -> T:
    """Call `run` (one whole transaction of rota's own, on a pooled connection) until it
    returns, trying again when it fails with a StoreError caused by a deadlock or a
    serialisation failure, `tries` times in all. Any other error is raised at once.

    Raises:
        StoreError: the last failure, its message saying how many tries failed so, when
            every try did (or the next wait would pass the thread's store-call deadline).
    """
    wait = first_wait_s
    for attempt in range(1, tries + 1):
        try:
            return run()
        except StoreError as error:
            sqlstate = rolled_back(error)
            if sqlstate is None:
                raise
            pause = wait * random.uniform(0.5, 1.0)
            deadline = deadline_at()
            out_of_time = deadline is not None and time.monotonic() + pause >= deadline
            if attempt == tries or out_of_time:
                kind = "a deadlock" if sqlstate == "40P01" else "a serialisation failure"
                then = ("the call's deadline comes before another" if attempt < tries
                        else "the store tries no more")
                raise StoreError(
                    f"{error} ({kind}, SQLSTATE {sqlstate}, in each of {attempt} tries, "
                    f"and {then}; each was rolled back whole, nothing of it was written: "
                    "call again)"
                ) from error.__cause__
            log.debug("retrying after SQLSTATE %s (try %d of %d failed)", sqlstate,
                      attempt, tries)
            sleep(pause)
            wait *= 2
    raise AssertionError("unreachable: the last try returns or raises")  # pragma: no cover


__all__ = ["RETRIED_SQLSTATES", "TRIES", "retried", "rolled_back"]
