"""What a Weighted group remembers of Queues without due work, across passes.

A Queue found empty (a claim came back short, or a claim's own probe said it left no due
job) stays out of the steps after its pass: it is not asked again, and its credit stands
still. A *probe* (one round trip that claims nothing) asks which of the Queues held for
empty have due work; those take part again. A group probes them:

- at its first pass, when it serves more Queues than it has free Workers: every Queue
  (a *survey*), so that a pass over thousands of tenants asks only those with work;
- when its caller says work may have come to any of them (`note_work`: a policy switch);
- when its caller says so (`begin_pass(recheck=True)`: the worker does every poll
  interval, so work that becomes due by the clock waits at most that long);
- before it goes idle: after a pass that claimed nothing, if Queues were held for empty
  since its last probe (`probe_pending` tells a drive to run that pass).

A wake-up hint that names a Queue (`hint`) brings it back at the next pass after the
group takes its hints (`take_hinted`), without a probe, if it is held for empty then: an
enqueue just made it due, most likely (the group reads the pass's time after taking
them). That holds
for a hint that arrives while a pass is finding the Queue drained (its claim read the
Queue before the enqueue committed). If it has no due job after all (say the job is due
later), its claim comes back short and it is held for empty again.

A paused or limited Queue that comes back short is found empty for its pass only: a Queue
control, not a lack of work, may be why.

Pure: no I/O, no clock, no asyncio, no randomness.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection


class EmptyQueueMemory:
    def __init__(self, queues: int) -> None:
        self._queues = queues
        self._surveyed = False
        self._pending = False  # the next pass probes the Queues held for empty
        self._unprobed = False  # a Queue was held for empty since the last probe
        # Queues that wake-up hints named since the last pass began (appended by any
        # thread, taken by the next pass: deque operations are atomic).
        self._hinted: deque[int] = deque()

    @property
    def probe_pending(self) -> bool:
        """Whether the next pass has Queues to ask that the group holds for empty."""
        return self._pending or bool(self._hinted)

    def note_work(self) -> None:
        """Any Queue held for empty may have work: the next pass probes them all (any
        thread: a bool store is atomic)."""
        self._pending = True
        self._unprobed = True

    def carry_over(self, old: EmptyQueueMemory) -> None:
        """Go on from what `old` knew, for the same Queues and more (new family members,
        which take part): its survey done or not, Queues held since its last probe. Its
        hints are not carried (their numbers are the old dispatcher's): a switch that
        finds hints pending has the next pass probe (rota.core.dispatch.switch)."""
        self._surveyed = old._surveyed
        self._unprobed = self._unprobed or old._unprobed

    def hint(self, index: int) -> None:
        """A wake-up hint named Queue `index` (any thread)."""
        self._hinted.append(index)

    def take_hinted(self) -> set[int]:
        """The Queues hinted since the last call."""
        taken: set[int] = set()
        while self._hinted:
            taken.add(self._hinted.popleft())
        return taken

    def to_probe(self, free: int, recheck: bool, out: Collection[int]) -> list[int] | None:
        """The Queues a pass into `free` Workers probes first, or None for no probe."""
        if free <= 0:
            return None
        if not self._surveyed:
            self._surveyed = True
            if self._queues > free:
                return list(range(self._queues))
        pending, self._pending = self._pending or recheck, False
        return sorted(out) if pending and out else None

    def probed(self) -> None:
        self._unprobed = False

    def pass_ended(self, *, claimed_nothing: bool, probed: bool, held_more: bool) -> None:
        """After a pass: `held_more`, it holds Queues for empty that it did not before."""
        if held_more:
            self._unprobed = True
        if claimed_nothing and not probed and self._unprobed:
            self._pending = True
