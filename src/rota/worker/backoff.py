"""The backoff of store retries in the runtime: 50 ms doubling to 5 s, reset on success.

Shared by a group's passes and outcome writer and by the lease sweeper, so that every
retry of a failing store slows down the same way. Imports nothing from rota.
"""

from __future__ import annotations

# Store errors are retried after this backoff, doubling up to the cap.
STORE_RETRY_FIRST_S = 0.05
STORE_RETRY_CAP_S = 5.0


class Backoff:
    """Exponential backoff for store retries: 50 ms doubling to 5 s; reset on success."""

    def __init__(self) -> None:
        self._next_s = STORE_RETRY_FIRST_S

    def next_delay_s(self) -> float:
        delay = self._next_s
        self._next_s = min(self._next_s * 2, STORE_RETRY_CAP_S)
        return delay

    def reset(self) -> None:
        self._next_s = STORE_RETRY_FIRST_S
