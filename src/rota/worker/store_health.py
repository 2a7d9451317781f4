"""Whether the store answers, as the runtime's store calls found it, and the one log of
each incident.

Every store call of the runtime reports here: `answered` or `failed` (a `StoreError`,
the deadline's `StoreTimeout` included). The store is **unreachable** from a failure
until the next answer of a call known to reach it (`CallKind.reaches_store`: not a
duty's call, which may swallow its errors, nor a renewal of no lease) and begun after
that failure (an answer to a call sent before it proves nothing about now); meanwhile
no group claims (rota.worker.loop), and the first answer after it wakes the groups.

An **incident** begins with a failure while none is open: that failure is logged at
WARNING with its cause, every later one at DEBUG. It lasts while the store is
unreachable or a call that its caller retries until it answers (`CallKind.retried`:
renewals, claims, outcome writes, sweeps) still fails, so a connection that hangs while
new ones pass is one incident, not one per try. Its end is logged once, also at WARNING
(so that a log at the default level shows both ends), with how long it lasted and how
many calls failed. Loop thread only.
Imports the worker's deadlines module.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from rota.worker.deadlines import CallKind

logger = logging.getLogger("rota")


class StoreHealth:
    """Tracks store failures and logs each incident once (see the module docstring).

    Args:
        on_answering: called when a call answers after the store was unreachable.
        monotonic: the timer for an incident's length.
    """

    def __init__(self, on_answering: Callable[[], None],
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._on_answering = on_answering
        self._monotonic = monotonic
        self.unreachable = False
        # The incident open, if any: when it began and how many calls failed in it; the
        # retried kinds whose last call failed.
        self._began: float | None = None
        self._failures = 0
        self._failing: set[str] = set()
        # Failures ever seen: a call reads it as it begins (`failures_seen`), and its
        # answer counts only if no failure came meanwhile.
        self.failures_seen = 0

    @property
    def in_incident(self) -> bool:
        return self._began is not None

    def failed(self, kind: CallKind, error: BaseException) -> None:
        self.failures_seen += 1
        self.unreachable = True
        if kind.retried:
            self._failing.add(kind.what)
        self._failures += 1
        if self._began is None:
            self._began = self._monotonic()
            logger.warning("store not answering: %s failed: %s; no new claims until it "
                           "answers", kind.what, error)
        else:
            logger.debug("store still not answering: %s failed: %s", kind.what, error)

    def answered(self, kind: CallKind, seen: int) -> None:
        """A call of `kind` answered; `seen` is `failures_seen` as it began."""
        if self._began is None or seen != self.failures_seen:
            return
        if kind.retried:
            self._failing.discard(kind.what)
        if self.unreachable and kind.reaches_store:
            self.unreachable = False
            self._on_answering()
        self._end_if_over()

    def _end_if_over(self) -> None:
        if self._began is None or self.unreachable or self._failing:
            return
        lasted_s = self._monotonic() - self._began
        failures, self._began, self._failures = self._failures, None, 0
        logger.warning("store answers again after %.1f s (%d failed %s); claiming resumes",
                       lasted_s, failures, "call" if failures == 1 else "calls")
