"""Claim floors: where each Queue's claims start in the index of scheduled jobs.

Every claim walks the partial index jobs_claimable (queue, due_at, id) from its start.
A claimed job's entry stays in that index, pointing at a row version that is dead, until
vacuum removes it; vacuum cannot while any transaction or replication slot holds back the
xmin horizon. Then every claim walks over every job claimed since the horizon stopped, and
claims slow down in proportion to the time it has been held (docs/decisions/0068).

A floor is a (due_at, id) position below which this process believes a Queue has no
claimable job: its claims scan from there. It rises with what the process's claims take
and falls with what the enqueue hints say became claimable:

- after a claim, to the last job it took from the Queue, or to `MARGIN` before the
  claim's `now` when it found fewer than it asked for (it saw every due job of the Queue
  that no other claim held; the margin keeps jobs enqueued just now, by a clock a little
  behind or in a transaction a little slow to commit, in the scan without waiting for
  their hint, for the price of walking a second of claimed entries);
- a hint naming a position (every statement that makes jobs claimable sends the smallest
  due time it made claimable, at commit) lowers it to that position; a hint without one
  (older versions, workflow releases, Queue settings) removes it;
- a claim that fails removes the floors of its Queues (its locks were rolled back), and
  each floor is removed `max_age_s` after it was set from scratch: the one case no hint
  covers, a claim of another process that locked jobs and then rolled back, is found
  within that time.

Floors are kept only while the store listens for enqueue hints (a lost hint would leave
a job under a floor): without a listener, or while its connection is being re-established,
every claim scans from the start, as before. A floor never skips a job for longer than
`max_age_s`, and in the normal case not at all.

Imports nothing from rota: a plain thread-safe table.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

# The position of "no floor": before every job.
START: Final = datetime(1, 1, 1, tzinfo=UTC)
MARGIN: Final = timedelta(seconds=1)
# Hints kept per Queue for the claims running while they came in: more during one claim
# and that claim does not raise the Queue's floor.
RECENT_HINTS: Final = 8
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def hint_payload_position(payload: str) -> tuple[str, datetime | None]:
    """The Queue and the position of an enqueue hint's payload: "queue" (no position) or
    "queue <due time in microseconds since the epoch>" (a Queue name holds no space)."""
    queue, _, micros = payload.rpartition(" ")
    if not queue or not micros.isdigit():
        return payload, None
    return queue, _EPOCH + timedelta(microseconds=int(micros))


@dataclass
class _Floor:
    due_at: datetime
    job_id: int
    born: float  # monotonic time the floor was first set after being removed


class ClaimFloors:
    """The floors of one store object's claims, shared by its threads."""

    def __init__(self, max_age_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age_s = max_age_s
        self._clock = clock
        self._lock = threading.Lock()
        self._floors: dict[str, _Floor] = {}
        # Every hint, removal or listener change takes the next stamp; a claim's token is
        # the stamp when it read its floors. The last few hints of each Queue are kept
        # with their stamps: a claim raises a floor no further than a hint that came in
        # while it ran (its snapshot may not have seen that job), and not at all if a
        # hint without a position, a removal, or more hints than are kept came in.
        self._stamp = 0
        self._recent: dict[str, deque[tuple[int, datetime | None]]] = {}
        self._evicted: dict[str, int] = {}  # per Queue, the newest stamp no longer kept
        self._all_stamp = 0
        self._listeners = 0  # floors are kept while at least one listener is healthy

    # -- the listener ---------------------------------------------------------------------

    def listening(self, healthy: bool) -> None:
        """A listener became healthy (True) or stopped being so (False). While none is,
        no floor is kept: a hint could be lost."""
        with self._lock:
            self._listeners += 1 if healthy else -1
            self._floors.clear()
            self._stamp += 1
            self._all_stamp = self._stamp

    def hint(self, queue: str, position: datetime | None) -> None:
        """A hint said jobs of `queue` became claimable at `position` or later (None:
        anywhere)."""
        with self._lock:
            self._note(queue, position)
            floor = self._floors.get(queue)
            if floor is None:
                return
            if position is None:
                del self._floors[queue]
            elif (position, 0) < (floor.due_at, floor.job_id):
                floor.due_at, floor.job_id = position, 0

    def _note(self, queue: str, position: datetime | None) -> None:
        self._stamp += 1
        recent = self._recent.get(queue)
        if recent is None:
            recent = self._recent[queue] = deque(maxlen=RECENT_HINTS)
        elif len(recent) == RECENT_HINTS:
            self._evicted[queue] = recent[0][0]
        recent.append((self._stamp, position))

    def _cap(self, queue: str, token: int) -> tuple[bool, datetime | None]:
        """Whether a claim that started at `token` may raise `queue`'s floor, and if so
        the lowest position hinted since (None: no hint since)."""
        if self._evicted.get(queue, 0) > token:
            return False, None
        lowest: datetime | None = None
        for stamp, position in self._recent.get(queue, ()):
            if stamp <= token:
                continue
            if position is None:
                return False, None
            lowest = position if lowest is None else min(lowest, position)
        return True, lowest

    # -- claims ---------------------------------------------------------------------------

    def positions(self, queues: Sequence[str]) -> tuple[list[datetime], list[int], int]:
        """The floors of `queues` (START where none) and the token `raise_` needs."""
        now = self._clock()
        dues: list[datetime] = []
        ids: list[int] = []
        with self._lock:
            for queue in queues:
                floor = self._floors.get(queue)
                if floor is not None and now - floor.born >= self.max_age_s:
                    del self._floors[queue]
                    floor = None
                dues.append(START if floor is None else floor.due_at)
                ids.append(0 if floor is None else floor.job_id)
            return dues, ids, self._stamp

    def raise_(self, token: int, reached: Iterable[tuple[str, datetime, int]]) -> None:
        """After a claim that started with `token`: each (queue, due_at, id) is a position
        below which that claim left no job it could take. A hint that came in since the
        claim started caps the raise at its position (the claim may not have seen that
        job); a removal or a listener change since then cancels it."""
        with self._lock:
            if self._all_stamp > token or self._listeners <= 0:
                return
            now = self._clock()
            for queue, due_at, job_id in reached:
                allowed, cap = self._cap(queue, token)
                if not allowed:
                    continue
                if cap is not None and (cap, 0) < (due_at, job_id):
                    due_at, job_id = cap, 0
                floor = self._floors.get(queue)
                if floor is None:
                    self._floors[queue] = _Floor(due_at, job_id, now)
                elif (due_at, job_id) > (floor.due_at, floor.job_id):
                    floor.due_at, floor.job_id = due_at, job_id

    def forget(self, queues: Iterable[str]) -> None:
        """Remove the floors of `queues` (a claim over them failed)."""
        with self._lock:
            for queue in queues:
                self._note(queue, None)
                self._floors.pop(queue, None)


def reached_positions(
    caps: Sequence[tuple[str, int]], limit: int, rows: Sequence[tuple[str, datetime, int]],
    now: datetime, *, exhaustive: bool,
) -> list[tuple[str, datetime, int]]:
    """Where a claim over `caps` (Queue, most to take; in order) with overall `limit`
    left each Queue, from its `rows` (queue, due_at, id; in claim order).

    A Queue the claim took from is reached up to its last job taken. A Queue it found
    fewer jobs in than it could take (`exhaustive`: each Queue's cap is what it could
    take, no concurrency limit or rate cut it) is reached up to `now` (less `MARGIN`):
    the claim saw every due job of it not held by another claim. A Queue the overall
    limit may have cut short is reached only as far as its rows show."""
    last: dict[str, tuple[datetime, int]] = {}
    taken: dict[str, int] = {}
    for queue, due_at, job_id in rows:
        last[queue] = (due_at, job_id)
        taken[queue] = taken.get(queue, 0) + 1
    filled = len(rows) >= limit
    last_queue = rows[-1][0] if rows else None
    reached: list[tuple[str, datetime, int]] = []
    cut = False  # past the Queue whose rows the overall limit may have cut
    for queue, cap in caps:
        count = taken.get(queue, 0)
        short = exhaustive and count < min(cap, limit) and not cut
        if short and filled and queue == last_queue:
            short = False
        if short:
            reached.append((queue, max(now - MARGIN, last.get(queue, (START, 0))[0]), 0))
        elif queue in last:
            reached.append((queue, *last[queue]))
        if filled and queue == last_queue:
            cut = True
    return reached
