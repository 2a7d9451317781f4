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
  (older versions, Queue settings) removes it;
- a claim that fails removes the floors of its Queues (its locks were rolled back);
- a floor `max_age_s` old is checked: the one case no hint covers, a claim of another
  process that locked jobs and then rolled back, may have left claimable jobs under it.
  The first claim that finds it so hands it to the store (`due_checks`), which looks for
  the first due job under it in the background (`checked`: the floor is lowered to what
  it found, and is good for another `max_age_s`). The claims meanwhile keep using it: a
  check walks entries under the floor, which while a snapshot is held can take long, and
  no claim waits for it.
- a check walks only from where the last one ended: what it found, or the floor it
  checked when it found nothing. Below that, the last check's snapshot saw no due job,
  and a job claimable there since came with a hint (which lowers that position too) or
  was visible to that check (a job another claim had locked is seen by a plain read). So
  while a snapshot is held a check walks the entries of about `max_age_s` of claims, not
  of the whole hold.

A claim in flight keeps the lowest position hinted for each of its Queues since it read
its floors (`begin`): it raises a floor no further than that (its snapshot may not have
seen the hinted job), and not at all after a hint without a position or a removal.

Floors are kept only while the store listens for enqueue hints (a lost hint would leave
a job under a floor): without a listener, or while its connection is being re-established,
every claim scans from the start, as before. A floor never skips a job for longer than
`max_age_s` and its check, and in the normal case not at all.

Imports nothing from rota: a plain thread-safe table.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final, NamedTuple

# The position of "no floor": before every job.
START: Final = datetime(1, 1, 1, tzinfo=UTC)
MARGIN: Final = timedelta(seconds=1)
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
    born: float  # monotonic time the floor was set, or last checked
    checking: bool = False  # its check is under way
    # Where its next check starts (the last check found no due job below), and where the
    # check under way ends unless it finds one; both lowered by hints.
    checked: tuple[datetime, int] = (START, 0)
    checking_to: tuple[datetime, int] = (START, 0)


class FloorCheck(NamedTuple):
    """A floor to check: look for the first due job of `queue` from (from_due, from_id)
    up to, not including, (due_at, job_id)."""

    queue: str
    from_due: datetime
    from_id: int
    due_at: datetime
    job_id: int


# What a claim in flight may raise a Queue's floor to: this position at most, or nothing.
_CANCELLED: Final = None


@dataclass
class _Flight:
    """A claim in flight: its Queues, and per Queue hinted since it began the lowest
    position hinted (or _CANCELLED)."""

    queues: frozenset[str]
    began: float
    caps: dict[str, datetime | None] = field(default_factory=dict)


class ClaimFloors:
    """The floors of one store object's claims, shared by its threads."""

    def __init__(self, max_age_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age_s = max_age_s
        self._clock = clock
        self._lock = threading.Lock()
        self._floors: dict[str, _Floor] = {}
        self._flights: dict[int, _Flight] = {}
        self._tokens = 0
        self._listeners = 0  # floors are kept while at least one listener is healthy

    # -- the listener ---------------------------------------------------------------------

    def listening(self, healthy: bool) -> None:
        """A listener became healthy (True) or stopped being so (False). While none is,
        no floor is kept: a hint could be lost. Claims in flight raise nothing."""
        with self._lock:
            self._listeners += 1 if healthy else -1
            self._floors.clear()
            self._flights.clear()

    def hint(self, queue: str, position: datetime | None) -> None:
        """A hint said jobs of `queue` became claimable at `position` or later (None:
        anywhere)."""
        with self._lock:
            self._lower(queue, position, 0)

    def _lower(self, queue: str, position: datetime | None, job_id: int) -> None:
        """Jobs of `queue` may be claimable from (position, job_id) on (None: anywhere):
        lower its floor there, and where its checks start, and cap the raise of every
        claim in flight over it."""
        for flight in self._flights.values():
            if queue in flight.queues:
                cap = flight.caps.get(queue, position)
                flight.caps[queue] = (_CANCELLED if cap is _CANCELLED or position is None
                                      else min(cap, position))
        floor = self._floors.get(queue)
        if floor is None:
            return
        if position is None:
            del self._floors[queue]
            return
        if (position, job_id) < (floor.due_at, floor.job_id):
            floor.due_at, floor.job_id = position, job_id
        floor.checked = min(floor.checked, (position, job_id))
        floor.checking_to = min(floor.checking_to, (position, job_id))

    # -- claims ---------------------------------------------------------------------------

    def positions(self, queues: Sequence[str]) -> tuple[list[datetime], list[int]]:
        """The floors of `queues` (START where none), to scan from (a probe's)."""
        with self._lock:
            return self._positions(queues)

    def _positions(self, queues: Sequence[str]) -> tuple[list[datetime], list[int]]:
        dues: list[datetime] = []
        ids: list[int] = []
        for queue in queues:
            floor = self._floors.get(queue)
            dues.append(START if floor is None else floor.due_at)
            ids.append(0 if floor is None else floor.job_id)
        return dues, ids

    def begin(self, queues: Sequence[str]) -> tuple[list[datetime], list[int], int]:
        """A claim over `queues` begins: their floors (START where none) and its token,
        which `raise_` or `forget` ends. A claim still in flight `max_age_s` after it
        began raises nothing."""
        now = self._clock()
        with self._lock:
            for token in [t for t, f in self._flights.items()
                          if now - f.began >= self.max_age_s]:
                del self._flights[token]
            self._tokens += 1
            self._flights[self._tokens] = _Flight(frozenset(queues), now)
            return (*self._positions(queues), self._tokens)

    def raise_(self, token: int, reached: Iterable[tuple[str, datetime, int]]) -> None:
        """The claim of `token` ended: each (queue, due_at, id) is a position below which
        it left no job it could take. A hint that came in since it began caps the raise
        at its position (the claim may not have seen that job); a positionless hint, a
        removal or a listener change since then cancels it."""
        with self._lock:
            flight = self._flights.pop(token, None)
            if flight is None or self._listeners <= 0:
                return
            now = self._clock()
            for queue, due_at, job_id in reached:
                if queue in flight.caps:
                    cap = flight.caps[queue]
                    if cap is _CANCELLED:
                        continue
                    if (cap, 0) < (due_at, job_id):
                        due_at, job_id = cap, 0
                floor = self._floors.get(queue)
                if floor is None:
                    self._floors[queue] = _Floor(due_at, job_id, now)
                elif (due_at, job_id) > (floor.due_at, floor.job_id):
                    floor.due_at, floor.job_id = due_at, job_id

    def forget(self, queues: Iterable[str], token: int | None = None) -> None:
        """Remove the floors of `queues` (a claim over them failed: `token`'s, which ends)."""
        with self._lock:
            if token is not None:
                self._flights.pop(token, None)
            for queue in queues:
                self._lower(queue, None, 0)

    # -- checks ---------------------------------------------------------------------------

    def due_checks(self, queues: Sequence[str]) -> list[FloorCheck]:
        """The floors of `queues` due for a check (`max_age_s` old, none under way), each
        with where its check starts; each is marked under way until `checked`."""
        now = self._clock()
        due: list[FloorCheck] = []
        with self._lock:
            for queue in queues:
                floor = self._floors.get(queue)
                if floor is not None and not floor.checking and (
                        now - floor.born >= self.max_age_s):
                    floor.checking = True
                    floor.checking_to = (floor.due_at, floor.job_id)
                    due.append(FloorCheck(queue, *floor.checked, floor.due_at, floor.job_id))
        return due

    def checked(self, queue: str, found: tuple[datetime, int] | None, *,
                failed: bool = False) -> None:
        """The check of `queue`'s floor found its first due job under it at `found` (None:
        none): the floor is lowered there and good for another `max_age_s`, and the next
        check starts there (or at the floor checked). A check that `failed` removes the
        floor."""
        with self._lock:
            floor = self._floors.get(queue)
            if floor is None or not floor.checking:  # removed since (and maybe set again)
                return
            if failed:
                self._lower(queue, None, 0)
                return
            floor.checking = False
            floor.born = self._clock()
            if found is not None:
                self._lower(queue, *found)  # checking_to too
            floor.checked = floor.checking_to


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
