"""What the App can tell of its store and its workers: whether they are fit to serve
(the one check behind `rota health` and the dashboard's `/healthz`), and what the
workers did (served counts and fairness).

The health check asks three questions, in order, each only when the one before it was
answered yes: the store answers; its schema is the one this rota's migrations reach; and,
for an App's Worker Groups, a live worker serves every Queue of their policies in force
(the stored one of a group, else the code's; who serves: rota.core.serving). It never
creates or migrates a store: the schema version is read on its own, before any other
call (a PostgreSQL store migrates on its first other call, so that call waits for a
current schema, when it is a no-op).

Then, on a store that reports its storage (`StorageReporting`), the warnings of
rota.core.storage_health: a held xmin horizon or a table of more dead rows than live ones
(PostgreSQL), a -wal file no checkpoint could fold back (SQLite). They leave `ok` alone:
the store still serves, only more slowly by the minute, and a liveness probe that
restarted workers would not release anyone's snapshot. `rota health --strict` fails on
them.

The reads of what the workers did (`served_since`, `fairness_over`) use the store's
worker registry and its per-minute served history, so they cover every worker on the
store and still answer after they all stopped; the arithmetic is the core's
(rota.core.workers). Imports the core and the store contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from rota.core.clock import Clock
from rota.core.durations import Duration, to_timedelta
from rota.core.group_policies import StoredPolicy
from rota.core.groups import WorkerGroupOptions
from rota.core.serving import (
    ServingIndex,
    fairness_in_force,
    in_force,
    policies_of,
    serving_groups,
)
from rota.core.storage_health import StorageLimits, storage_warnings
from rota.core.workers import GroupFairness, ServedCount, minute_of
from rota.store import (
    Store,
    StoreClock,
    StoreConfigError,
    StoreError,
    mask_url,
    open_store,
    policies_in_force,
    stored_policies,
)
from rota.store.base import Migratable, StorageReporting


@dataclass(frozen=True, slots=True)
class Health:
    """The answer of a health check (`App.health`, `rota health`, `GET /healthz`).

    Attributes:
        ok: True when every question was answered yes.
        store: the store's URL (password masked).
        problems: why it is not healthy, one sentence each (empty when `ok`).
        schema_version: the store's schema version; None for a store without one
            (memory://) or one that did not answer.
        known_schema_version: the version this rota's migrations reach (None likewise).
        queues: the Queues of the checked Worker Groups' policies in force (the stored
            one of a group, else the code's), in declaration order.
        unserved: those of `queues` that no live worker serves.
        warnings: what will slow the store down if left alone, one sentence each, naming
            the cause and the remedy (a held xmin horizon, dead rows, a large WAL); they
            do not make the answer unhealthy.
    """

    ok: bool
    store: str
    problems: tuple[str, ...] = ()
    schema_version: int | None = None
    known_schema_version: int | None = None
    queues: tuple[str, ...] = ()
    unserved: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON body of `/healthz` and `rota health --json`."""
        return {
            "ok": self.ok, "store": self.store, "problems": list(self.problems),
            "schema_version": self.schema_version,
            "known_schema_version": self.known_schema_version,
            "queues": list(self.queues), "unserved": list(self.unserved),
            "warnings": list(self.warnings),
        }


def _schema_problem(store: Store, version: int, known: int) -> str | None:
    if version == known:
        return None
    if version == 0:
        return f"{store.url} holds no rota schema (version 0): run `rota migrate` or " \
            "start a worker"
    if version < known:
        return f"{store.url} has schema version {version}, this rota needs {known}: run " \
            "`rota migrate` (or start a worker) first"
    return f"{store.url} has schema version {version}, newer than this rota knows " \
        f"({known}): upgrade rota"


def app_queues(groups: Sequence[WorkerGroupOptions],
               stored: Mapping[str, StoredPolicy]) -> tuple[str, ...]:
    """The Queues of `groups`' policies in force (`stored`: the stored policies, by
    group), in declaration order."""
    found = (in_force(group.policy, stored.get(group.name)) for group in groups)
    return tuple(dict.fromkeys(q for one in found if one is not None
                               for q in one.policy.queues))


def store_warnings(store: Store, limits: StorageLimits | None = None) -> tuple[str, ...]:
    """The warnings of `store`'s own storage (none for a store that reports none). A
    store that cannot say is a warning too, not an error: the other questions answer
    whether it serves."""
    if not isinstance(store, StorageReporting):
        return ()
    try:
        return storage_warnings(store.storage_health(), limits)
    except StoreError as error:
        return (f"cannot read the store's storage health: {error}",)


def check_health(
    store: Store, clock: Clock, groups: Sequence[WorkerGroupOptions] = (),
    limits: StorageLimits | None = None,
) -> Health:
    """Check `store` (and, given `groups`, that live workers serve their Queues) at
    `clock`'s now, read only once the schema is known to be current (a store clock reads
    the store); then read its storage's warnings (`limits`: where they start).

    A store error is an answer (the store is down), not an exception.
    """
    version = known = None
    if isinstance(store, Migratable):
        try:
            version, known = store.schema_version(), store.known_schema_version()
        except StoreError as error:
            return Health(False, store.url, (f"the store does not answer: {error}",))
        problem = _schema_problem(store, version, known)
        if problem is not None:
            return Health(False, store.url, (problem,), version, known)
    try:
        # Also the question "does it answer" for a store without a schema.
        live = ServingIndex(policies_of(policies_in_force(store, clock.now())))
        stored = stored_policies(store) if groups else {}
    except StoreError as error:
        return Health(False, store.url, (f"the store does not answer: {error}",),
                      version, known, app_queues(groups, {}))
    queues = app_queues(groups, stored)
    unserved = tuple(queue for queue in queues if not serving_groups(queue, live))
    problems: tuple[str, ...] = ()
    if unserved:
        names = ", ".join(repr(queue) for queue in unserved)
        problems = (f"no live worker serves Queue(s) {names}: start `rota worker` for "
                    "the App's groups",)
    return Health(not problems, store.url, problems, version, known, queues, unserved,
                  store_warnings(store, limits))


def check_store_url(url: str) -> Health:
    """Open the store `url` names read-only (never creating or migrating it), check it,
    close it. A URL that cannot be opened is an unhealthy answer naming why."""
    try:
        store = open_store(url, read_only=True)
    except (StoreConfigError, StoreError) as error:
        return Health(False, mask_url(url), (f"the store cannot be opened: {error}",))
    try:
        return check_health(store, StoreClock(store))
    finally:
        store.close()


def served_since(store: Store, clock: Clock, since: datetime | None) -> list[ServedCount]:
    """`App.served`: the history from `since` (default: the last hour)."""
    if since is None:
        since = clock.now() - timedelta(hours=1)
    elif not isinstance(since, datetime) or since.tzinfo is None:
        raise TypeError(f"since must be a timezone-aware datetime; got {since!r}")
    return store.served_counts(since)


def fairness_over(store: Store, clock: Clock, window: Duration) -> list[GroupFairness]:
    """`App.fairness`: served against target shares over whole minutes since the minute
    boundary at or before now - `window`, the minute in progress included; against each
    group's policy in force, since its change if it changed within the window."""
    span = to_timedelta(window, "window")
    now = clock.now()
    since = minute_of(now - span)
    return fairness_in_force(
        store.worker_groups(), store.list_workers(now), store.served_counts(since), since,
        stored_policies(store),
    )
