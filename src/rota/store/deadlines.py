"""Deadlines for store calls: how long the thread calling a store method will wait.

A caller that must not hang on a store that stopped answering (the worker's heartbeats,
claims and outcome writes) runs the call inside `call_deadline(seconds)`. A store that can
enforce it (PostgreSQL: rota.store.postgres.watchdog) ends a statement still unanswered at
the deadline by dropping its connection, and raises `StoreTimeout`; a store whose calls
cannot hang on a network (memory, SQLite with its busy timeout) may ignore it. The
deadline lives on the calling thread (store calls run on the caller's thread), so nested
deadlines keep the earlier one. Imports nothing from rota but the store's errors.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rota.store.base import StoreError


class StoreTimeout(StoreError):
    """The store did not answer within the call's deadline; the connection it used was
    dropped (a fresh one serves the next call)."""


_local = threading.local()


@contextmanager
def call_deadline(seconds: float | None) -> Iterator[None]:
    """Store calls made on this thread inside the block must answer within `seconds`
    (None: no deadline of its own; an enclosing one still holds)."""
    outer: float | None = getattr(_local, "at", None)
    at = outer
    if seconds is not None:
        mine = time.monotonic() + max(0.0, seconds)
        at = mine if outer is None else min(outer, mine)
    _local.at = at
    try:
        yield
    finally:
        _local.at = outer


def deadline_at() -> float | None:
    """The deadline of this thread's store calls, in `time.monotonic()` seconds, or None."""
    at: float | None = getattr(_local, "at", None)
    return at


__all__ = ["StoreTimeout", "call_deadline", "deadline_at"]
