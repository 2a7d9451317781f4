"""Queue controls: a Queue's settings (paused, concurrency limit), the one rule for how
many jobs a claim may take from it, and `QueueInfo`, the operator's view of a Queue.

Theory of operation: settings live in the store beside the jobs and are read by every
claim (no cache), so every worker obeys a change at its next claim. A claim may lease from
a Queue at most `room(settings, leased, wanted)` jobs: none while it is paused, and never so
many that more than `limit` of its jobs are leased at once. The memory store and the
simulator apply `room` directly; each SQL dialect spells the same rule once, in the part
`room` of its claim.sql (rota/store/sql/*/claim.sql), which all its claim statements are
composed with, and tests/store/test_contract_room.py checks every store against `room`
on the same inputs.

Pure: no I/O, no clock. Imports only `rota.core.jobs`, `rota.core.rates` and
`rota.core.settings_range`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from rota.core.jobs import JobState
from rota.core.rates import QueueRate, RatedQueue, available, describe_period, next_token_at
from rota.core.settings_range import checked_setting

__all__ = [
    "QueueInfo",
    "QueueSettings",
    "build_queue_infos",
    "room",
    "validate_queue_limit",
]


def validate_queue_limit(limit: object) -> int | None:
    """Return `limit` if it is a valid concurrency limit: a whole number from 0 to
    `MAX_SETTING` (2**31 - 1; 0 takes nothing), or None for no limit.

    Raises:
        TypeError: if it is not an int or None (a bool is not a limit).
        ValueError: if it is outside that range.
    """
    if limit is None:
        return None
    return checked_setting(limit, "a Queue's limit", minimum=0,
                           none="None for no limit (0 takes nothing)")


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """What an operator set on a Queue. The defaults are those of a Queue never touched."""

    queue: str
    paused: bool = False
    limit: int | None = None

    @property
    def is_default(self) -> bool:
        """Whether these settings change nothing (a Queue with no settings)."""
        return not self.paused and self.limit is None


def room(settings: QueueSettings | None, leased: int, wanted: int) -> int:
    """How many jobs a claim may lease from a Queue now. Spelled in SQL too: the part
    `room` of each dialect's claim.sql (a change here is made there).

    Args:
        settings: the Queue's settings; None means defaults (not paused, no limit).
        leased: how many of its jobs are leased right now (by any worker).
        wanted: how many the claim asks for.
    """
    if settings is None:
        return max(0, wanted)
    if settings.paused:
        return 0
    if settings.limit is None:
        return max(0, wanted)
    return max(0, min(wanted, settings.limit - leased))


@dataclass(frozen=True, slots=True)
class QueueInfo:
    """One Queue as `app.queues()` shows it.

    Attributes:
        name: the Queue's name.
        paused: whether claims take nothing from it.
        limit: the most jobs of it leased at once, all workers together; None: no limit.
        counts: jobs per state; every `JobState` is present (0 if none).
        due: scheduled jobs due now (due_at <= the `now` the view was taken at).
        oldest_due_at: the due time of the longest-waiting due job; None if none is due.
        rate: its rate limit (`QueueRate`, with the burst in force); None: no rate limit.
        tokens: with a rate, the whole tokens in its bucket at the view's `now`: how many
            of its jobs a claim then could take (0: its rate is reached); None: no rate.
        next_token_at: with a rate, when its bucket next holds a whole token (the view's
            `now` if it holds one already); None: no rate.
    """

    name: str
    paused: bool = False
    limit: int | None = None
    counts: dict[JobState, int] = field(default_factory=dict)
    due: int = 0
    oldest_due_at: datetime | None = None
    rate: QueueRate | None = None
    tokens: int | None = None
    next_token_at: datetime | None = None


def build_queue_infos(
    settings: Iterable[QueueSettings],
    counts: Mapping[tuple[str, JobState], int],
    due: Mapping[str, tuple[int, datetime | None]],
    rates: Mapping[str, RatedQueue] | None = None,
    now: datetime | None = None,
) -> list[QueueInfo]:
    """The `QueueInfo`s of every Queue that has jobs or non-default settings, by name.

    Args:
        settings: the stored settings (rows with default values count as none).
        counts: jobs per (Queue, state); pairs with none may be left out.
        due: per Queue, (jobs due now, the oldest due time among them).
        rates: the rated Queues (rate and bucket), by Queue (a rated Queue is listed).
        now: the instant of the view: its buckets' tokens are counted then.

    Raises:
        ValueError: if `rates` is given without `now`.
    """
    rates = rates or {}
    if rates and now is None:
        raise ValueError("a view of rated Queues needs the `now` to count their tokens at")
    by_queue = {one.queue: one for one in settings if not one.is_default}
    names = (set(by_queue) | set(rates)
             | {queue for (queue, _), count in counts.items() if count > 0})
    infos: list[QueueInfo] = []
    for name in sorted(names):
        one = by_queue.get(name, QueueSettings(name))
        due_count, oldest = due.get(name, (0, None))
        rated = rates.get(name)
        tokens = next_at = None
        if rated is not None and now is not None:
            tokens, next_at = available(*rated, now), next_token_at(*rated, now)
        infos.append(QueueInfo(
            name=name, paused=one.paused, limit=one.limit,
            counts={state: counts.get((name, state), 0) for state in JobState},
            due=due_count, oldest_due_at=oldest if due_count else None,
            rate=None if rated is None else rated[0], tokens=tokens, next_token_at=next_at,
        ))
    return infos



def held_back_reason(info: QueueInfo | None) -> str | None:
    """Why a Queue may be served less than its weight asks, as people read it: "paused",
    "limit N reached" (N of its jobs leased, its limit), "rate N/PERIOD reached" (its
    bucket holds no whole token at the view's `now`; the rate as `rota queues` shows it,
    e.g. "rate 10/1m reached"), "nothing due"; None when nothing holds it back. The
    fairness view shows it beside the Queue's shares.

    One reason, the first that applies in this order (each one explains the next: a
    paused Queue may also have nothing due). A new Queue control adds its reason here,
    before "nothing due".
    """
    if info is None:
        return "nothing due"
    if info.paused:
        return "paused"
    if info.limit is not None and info.counts.get(JobState.LEASED, 0) >= info.limit:
        return f"limit {info.limit} reached"
    if info.rate is not None and info.tokens == 0:
        return f"rate {info.rate.jobs}/{describe_period(info.rate.per)} reached"
    if info.due == 0:
        return "nothing due"
    return None
