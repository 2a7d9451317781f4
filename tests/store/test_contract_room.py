"""The store contract for a Queue's room: a claim takes from a paused, limited or rated
Queue exactly what `rota.core.queue_controls.room` gives (its rate's tokens capping what
is asked), on every store and through every claim statement: the SQL stores spell the rule
once each (the part room of sqlite/claim.sql and postgres/claim.sql), and this checks that
spelling against the core on the same inputs. Settings on a family holding the Queue
(and none on the Queue itself) give the same room, the Queue counting its own leased jobs
and taking from its own bucket. Run unchanged against every store."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rota.core.jobs import NewJob
from rota.core.queue_controls import QueueSettings, room
from rota.core.rates import QueueRate
from rota.store import Store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=1)
DUE = 6  # due jobs in the Queue: more than any claim asks, so only the room binds
# Each example takes Queues of its own, in the one store of the test.
_names = itertools.count()

# How the claim asks: one Queue alone (SQLite's claim, PostgreSQL's claim then
# claim_limited); a batched claim with per-Queue counts beside another Queue (SQLite's
# claim_many); a batched claim of one job from each (SQLite's claim_ones).
PATHS = ("alone", "batched", "ones")


def _settings(queue: str, kind: str, limit: int | None) -> QueueSettings | None:
    """The settings of `queue` the example sets: none at all, a row left at the defaults
    (paused then resumed), or paused; each with `limit`."""
    if kind == "none" and limit is None:
        return None
    return QueueSettings(queue, paused=kind == "paused", limit=limit)


def _apply(store: Store, queue: str, kind: str, limit: int | None) -> None:
    if kind == "default":
        store.pause_queue(queue)
        store.resume_queue(queue)
    if limit is not None:
        store.set_queue_limit(queue, limit)
    if kind == "paused":
        store.pause_queue(queue)


def _taken(store: Store, queue: str, other: str, wanted: int, path: str) -> int:
    """How many jobs of `queue` a claim asking `wanted` of it took, by `path`."""
    common = {"now": T0, "owner": "w", "lease_expires_at": T0 + LEASE}
    if path == "alone":
        claimed = store.claim([queue], wanted, **common)  # type: ignore[arg-type]
    elif path == "batched":  # two per-Queue counts that fit in the total, not all 1
        claimed = store.claim([queue, other], wanted + 2, limits=[wanted, 2],
                              **common)  # type: ignore[arg-type]
    else:
        claimed = store.claim([queue, other], 2, limits=[1, 1],
                              **common)  # type: ignore[arg-type]
    return sum(1 for job in claimed if job.queue == queue)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(["none", "default", "paused"]),
    limit=st.none() | st.integers(0, 4),
    leased=st.integers(0, 4),
    wanted=st.integers(0, 5),
    tokens=st.none() | st.integers(1, 4),
    path=st.sampled_from(PATHS),
    on_family=st.booleans(),
)
def test_a_claim_takes_what_the_core_room_rule_gives(
    store: Store, kind: str, limit: int | None, leased: int, wanted: int,
    tokens: int | None, path: str, on_family: bool,
) -> None:
    number = next(_names)
    queue, other = f"room{number}-q", f"other{number}"
    # The settings go on the Queue, or on a family holding it (and the other Queue's
    # family-mate, which must not share its count or bucket)
    target = f"room{number}-*" if on_family else queue
    mate = f"room{number}-mate"
    if path == "ones":
        wanted = 1
    # Given a Queue with `leased` jobs leased (before any control) and DUE more due
    store.enqueue([NewJob("job", queue, T0) for _ in range(leased + DUE)]
                  + [NewJob("job", other, T0) for _ in range(2)]
                  + [NewJob("job", mate, T0) for _ in range(3)], T0)
    if leased:
        held = store.claim([queue], leased, now=T0, owner="holder", lease_expires_at=T0 + LEASE)
        assert len(held) == leased
    # And its settings, and a rate whose full bucket holds `tokens`
    _apply(store, target, kind, limit)
    if tokens is not None:
        store.set_queue_rate(target, QueueRate(jobs=1, per=timedelta(hours=1), burst=tokens))
    if on_family and kind != "paused":  # the mate takes from its own count and bucket
        store.claim([mate], 1, now=T0, owner="mate", lease_expires_at=T0 + LEASE)
    # When a claim asks `wanted` of it
    taken = _taken(store, queue, other, wanted, path)
    # Then it took what the core's rule gives: its room for what the tokens let it ask
    asked = wanted if tokens is None else min(wanted, tokens)
    assert taken == room(_settings(queue, kind, limit), leased, asked), (
        kind, limit, leased, wanted, tokens, path, on_family)
