"""Settings on a Queue family in the SQL stores' claims.

A family's settings are a row of the Queue settings table named like the family
(`"tenant-*"`). The claim statements apply a Queue's own row (each dialect's claim.sql,
part `room`); what a family adds, the claim applies here before it runs them, from the
family rows (`family_settings.sql`), the own rows of the members asked
(`member_settings.sql`, or `lock_queue_limits.sql` under PostgreSQL's lock) and their
leased counts: the rule is rota.core.queue_controls.settings_in_force, as in the memory
store. A member paused by its family takes nothing; one whose limit is its family's takes
at most that limit less its own leased jobs; one whose rate is its family's takes from
its own bucket (the bucket columns of its own row, which the claim creates on its first
take).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from rota.core.families import family_prefix
from rota.core.queue_controls import InForce, QueueSettings, settings_in_force
from rota.core.rates import Bucket, QueueRate, RatedQueue

# A family row: (name, paused, limit, rate_jobs, rate_per_us, rate_burst).
# An own row: (queue, paused, limit, rate_jobs, rate_per_us, rate_burst, empty_us, empty_rem).
Row = Sequence[object]
Families = dict[str, tuple[QueueSettings | None, QueueRate | None]]


def _rate(jobs: object, per_us: object, burst: object) -> QueueRate | None:
    if jobs is None:
        return None
    assert isinstance(jobs, int) and isinstance(per_us, int) and isinstance(burst, int)
    return QueueRate(jobs, timedelta(microseconds=per_us), burst)


def _settings(name: str, paused: object, limit: object) -> QueueSettings:
    assert limit is None or isinstance(limit, int)
    return QueueSettings(name, paused=bool(paused), limit=limit)


def families_of(rows: Iterable[Row]) -> Families:
    """The families with a setting, from `family_settings.sql`'s rows."""
    return {str(name): (_settings(str(name), paused, limit), _rate(jobs, per_us, burst))
            for name, paused, limit, jobs, per_us, burst in rows}


def limiting(families: Families) -> Families:
    """The families with a limit or a rate (not only a pause)."""
    return {name: (settings, rate) for name, (settings, rate) in families.items()
            if rate is not None or (settings is not None and settings.limit is not None)}


def held(queues: Iterable[str], families: Families) -> list[str]:
    """The Queues among `queues` that a family with a setting holds."""
    prefixes = [family_prefix(name) for name in families]
    return [queue for queue in queues if any(queue.startswith(p) for p in prefixes)]


def forces(members: Iterable[str], families: Families, own: Mapping[str, Row]
           ) -> dict[str, InForce]:
    """The settings in force on each member, from its own row (if any) and the families."""
    found: dict[str, InForce] = {}
    for queue in members:
        row = own.get(queue)
        found[queue] = settings_in_force(
            queue, None if row is None else _settings(queue, row[1], row[2]),
            None if row is None else _rate(row[3], row[4], row[5]), families)
    return found


def family_limited(found: Mapping[str, InForce], own: Mapping[str, Row]) -> dict[str, int]:
    """The members whose limit in force is a family's (their own rows set none): the
    limit each, whose leased jobs the claim must count."""
    return {queue: force.limit for queue, force in found.items()
            if force.limit is not None and not force.paused
            and (queue not in own or own[queue][2] is None)}


@dataclass
class FamilyAsks:
    """A claim's asks once the families' settings are applied."""

    asks: list[tuple[str, int]]
    rated: dict[str, RatedQueue] = field(default_factory=dict)  # rates that are a family's
    controlled: list[str] = field(default_factory=list)


def apply_families(
    asks: Sequence[tuple[str, int]], members: Iterable[str], families: Families,
    own: Mapping[str, Row], count_leased: Callable[[Mapping[str, int]], Mapping[str, int]],
) -> FamilyAsks:
    """`asks` (Queue, most to take) capped by what the families set (module docstring):
    `members`, those of the asked Queues that the `families` hold; `own`, their own rows;
    `count_leased(limits)`, the leased jobs of each Queue of `limits` (Queue -> the
    family limit in force on it), up to its limit."""
    found = forces(members, families, own)
    counted = family_limited(found, own)
    leased = count_leased(counted) if counted else {}
    result = FamilyAsks([])
    for queue, count in asks:
        force = found.get(queue)
        if force is not None and force.family is not None:
            if force.paused:
                count = 0
                result.controlled.append(queue)
            elif queue in leased:
                assert force.limit is not None
                count = max(0, min(count, force.limit - leased[queue]))
                result.controlled.append(queue)
            if force.rate_of_family:
                assert force.rate is not None
                result.rated[queue] = (force.rate, _bucket(own.get(queue)))
        result.asks.append((queue, count))
    return result


def _bucket(row: Row | None) -> Bucket | None:
    """A member's own bucket, from its row's bucket columns (None: full)."""
    if row is None or row[6] is None:
        return None
    empty_us, remainder = row[6], row[7]
    assert isinstance(empty_us, int) and (remainder is None or isinstance(remainder, int))
    return Bucket(empty_us, remainder or 0)
