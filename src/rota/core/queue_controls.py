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

Settings on a family (a name ending in `*`, rota.core.families) apply to each member Queue
that has no setting of its own of that kind (`settings_in_force`): a paused family pauses
every member, whatever the member's own flag; a member's own limit or rate wins over a
family's; among the families holding a member, the longest prefix wins. Each member counts
its own leased jobs against the limit and has its own token bucket.

Pure: no I/O, no clock. Imports only `rota.core.jobs`, `rota.core.rates`,
`rota.core.families` and `rota.core.settings_range`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from rota.core.families import family_prefix, is_family
from rota.core.jobs import JobState
from rota.core.rates import (
    Bucket,
    QueueRate,
    RatedQueue,
    available,
    describe_period,
    next_token_at,
)
from rota.core.settings_range import checked_setting

__all__ = [
    "InForce",
    "QueueInfo",
    "QueueSettings",
    "build_queue_infos",
    "room",
    "settings_in_force",
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
        family: on a Queue, the family (`"tenant-*"`) whose settings apply to it (the
            longest of those holding it whose pause, limit or rate is in force here);
            None if only its own apply. None on a family's entry.
        members: on a family's entry (`name` ends in `*`: its own settings, counts and
            `due` summed over its members, `tokens` None as each member has its own
            bucket), how many Queues the store knows that it holds; None on a Queue.
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
    family: str | None = None
    members: int | None = None


@dataclass(frozen=True, slots=True)
class InForce:
    """The settings in force on one Queue: its own, or a family's where it has none of
    that kind (`settings_in_force`)."""

    paused: bool = False
    limit: int | None = None
    rate: QueueRate | None = None
    family: str | None = None  # the family whose settings apply (see QueueInfo.family)
    rate_of_family: bool = False  # its rate is a family's (its bucket is its own still)

    @property
    def settings(self) -> QueueSettings | None:
        """As `room` takes them (None: nothing limits it)."""
        if not self.paused and self.limit is None:
            return None
        return QueueSettings("", paused=self.paused, limit=self.limit)


def settings_in_force(
    queue: str,
    own: QueueSettings | None,
    own_rate: QueueRate | None,
    families: Mapping[str, tuple[QueueSettings | None, QueueRate | None]],
) -> InForce:
    """The settings in force on `queue` (module docstring): paused if it or any family
    holding it is paused; its own limit, else that of the longest family holding it that
    has one; its own rate likewise.

    Args:
        queue: a Queue name (not a family).
        own: its own settings, if any.
        own_rate: its own rate, if any.
        families: every family that has a setting: name (`"tenant-*"`) -> its settings
            and rate (those that do not hold `queue` are ignored).
    """
    holding = sorted((name for name in families
                      if queue.startswith(family_prefix(name))), key=len, reverse=True)
    paused = own is not None and own.paused
    limit = None if own is None else own.limit
    rate = own_rate
    applies: list[str] = []
    for name in holding:
        settings, family_rate = families[name]
        if settings is not None and settings.paused:
            paused = True
            applies.append(name)
        if limit is None and settings is not None and settings.limit is not None:
            limit = settings.limit
            applies.append(name)
        if rate is None and family_rate is not None:
            rate = family_rate
            applies.append(name)
    family = max(applies, key=len) if applies else None
    return InForce(paused, limit, rate, family,
                   rate_of_family=own_rate is None and rate is not None)


def build_queue_infos(
    settings: Iterable[QueueSettings],
    counts: Mapping[tuple[str, JobState], int],
    due: Mapping[str, tuple[int, datetime | None]],
    rates: Mapping[str, RatedQueue] | None = None,
    now: datetime | None = None,
    buckets: Mapping[str, Bucket] | None = None,
) -> list[QueueInfo]:
    """The `QueueInfo`s of every Queue that has jobs or non-default settings, with the
    settings in force (`settings_in_force`), and one entry per family that has a setting;
    by name (a family sorts before the members whose next character sorts after `*`).

    Args:
        settings: the stored settings, families' included (rows with default values count
            as none).
        counts: jobs per (Queue, state); pairs with none may be left out.
        due: per Queue, (jobs due now, the oldest due time among them).
        rates: the rated Queues and families (rate and bucket), by name.
        now: the instant of the view: its buckets' tokens are counted then.
        buckets: the buckets of Queues whose rate is a family's, by Queue (none: full).

    Raises:
        ValueError: if `rates` is given without `now`.
    """
    rates = rates or {}
    buckets = buckets or {}
    if rates and now is None:
        raise ValueError("a view of rated Queues needs the `now` to count their tokens at")
    by_queue = {one.queue: one for one in settings if not one.is_default}
    families: dict[str, tuple[QueueSettings | None, QueueRate | None]] = {
        name: (by_queue.get(name), rated[0] if (rated := rates.get(name)) else None)
        for name in {*by_queue, *rates} if is_family(name)}
    names = sorted(name for name in (
        set(by_queue) | set(rates) | {queue for (queue, _), count in counts.items() if count > 0}
    ) if not is_family(name))
    infos: list[QueueInfo] = []
    for name in names:
        own_rate = rates.get(name)
        force = settings_in_force(name, by_queue.get(name),
                                  None if own_rate is None else own_rate[0], families)
        due_count, oldest = due.get(name, (0, None))
        tokens = next_at = None
        if force.rate is not None and now is not None:
            bucket = buckets.get(name) if force.rate_of_family else (own_rate or (None, None))[1]
            tokens, next_at = available(force.rate, bucket, now), next_token_at(
                force.rate, bucket, now)
        infos.append(QueueInfo(
            name=name, paused=force.paused, limit=force.limit,
            counts={state: counts.get((name, state), 0) for state in JobState},
            due=due_count, oldest_due_at=oldest if due_count else None,
            rate=force.rate, tokens=tokens, next_token_at=next_at, family=force.family,
        ))
    for family, (own, rate) in families.items():
        held = [info for info in infos if info.name.startswith(family_prefix(family))]
        dues = [info.oldest_due_at for info in held if info.oldest_due_at is not None]
        infos.append(QueueInfo(
            name=family, paused=own is not None and own.paused,
            limit=None if own is None else own.limit,
            counts={state: sum(info.counts[state] for info in held) for state in JobState},
            due=sum(info.due for info in held), oldest_due_at=min(dues, default=None),
            rate=rate, members=len(held),
        ))
    infos.sort(key=lambda info: info.name)
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
