"""The App's reads of what the workers did: served counts and fairness.

Both read the store's worker registry and its per-minute served history, so they cover
every worker on the store and still answer after they all stopped; the arithmetic is
the core's (rota.core.workers). The argument checks live here, the docs on `App`.
Imports the core and the store contract.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from rota.core.clock import Clock
from rota.core.durations import Duration, to_timedelta
from rota.core.workers import GroupFairness, ServedCount, fairness, minute_of
from rota.store.base import Store


def served_since(store: Store, clock: Clock, since: datetime | None) -> list[ServedCount]:
    """`App.served`: the history from `since` (default: the last hour)."""
    if since is None:
        since = clock.now() - timedelta(hours=1)
    elif not isinstance(since, datetime) or since.tzinfo is None:
        raise TypeError(f"since must be a timezone-aware datetime; got {since!r}")
    return store.served_counts(since)


def fairness_over(store: Store, clock: Clock, window: Duration) -> list[GroupFairness]:
    """`App.fairness`: served against target shares over whole minutes since the minute
    boundary at or before now - `window`, the minute in progress included."""
    span = to_timedelta(window, "window")
    now = clock.now()
    since = minute_of(now - span)
    return fairness(
        store.worker_groups(), store.list_workers(now), store.served_counts(since), since,
    )
