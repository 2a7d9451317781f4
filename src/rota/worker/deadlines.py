"""How long the worker waits for each kind of store call, and when a lease counts as lost.

Every store call of the runtime runs inside `rota.store.deadlines.call_deadline` on its
store thread (a store that can, PostgreSQL, drops a connection still silent at the
deadline and raises `StoreTimeout`), with an asyncio backstop a little later
(`backstop_s`) that gives up on the thread for stores that cannot enforce it. Why each
figure (docs/decisions/0062):

- **Renewals** (heartbeats): from a renewal falling due (`heartbeat_interval` after the
  last one sent) to the lease's end minus the lapse margin there are
  `lease - interval - margin` seconds, the window. Half of it, at most
  `RENEWAL_DEADLINE_CAP_S`, is one try's deadline: the first try, on a warm connection,
  gets as long as a slow link needs (a try that times out drops its connection, and a
  fresh one costs several round trips); if it fails even at its backstop, the retry (after
  a quarter of a try's deadline) starts with at least a quarter of the window left, which
  a fresh connection on a healthy network needs a few milliseconds of. The cancel-request
  reads of the heartbeat task share the deadline.
- **Claims, releases and outcome writes**: `lease - interval`, the time after which a
  claim's jobs would be handed back as late anyway, between `CALL_DEADLINE_FLOOR_S` (so
  that SQLite's 5 s busy wait for its write lock never ends in an abandoned write) and
  `CALL_DEADLINE_CAP_S` (a connection stuck that long is dead, not slow).
- **Duties** (retention, schedules, the registry...): `DUTY_DEADLINE_S`, room for their
  batched deletes; the lease sweeper, which also tells the worker the store answers
  again, gets the claims' deadline of the shortest lease.

A lease whose end (as the worker last sent it) comes within the lapse margin,
`min(1 s, lease / 10)`, without a successful renewal is treated as lost.
Imports the core only.
"""

from __future__ import annotations

from dataclasses import dataclass

from rota.core.groups import WorkerGroupOptions

RENEWAL_DEADLINE_CAP_S = 10.0
CALL_DEADLINE_FLOOR_S = 5.0
CALL_DEADLINE_CAP_S = 30.0
DUTY_DEADLINE_S = 60.0
# The backstop waits this share of the deadline longer, at most BACKSTOP_CAP_S.
BACKSTOP_SHARE = 0.25
BACKSTOP_CAP_S = 1.0
# A failed renewal is tried again after a quarter of a try's deadline, at most this long.
RENEWAL_RETRY_CAP_S = 1.0


def backstop_s(deadline_s: float) -> float:
    """How long the runtime waits for a call with `deadline_s` before giving up on it."""
    return deadline_s + min(BACKSTOP_CAP_S, deadline_s * BACKSTOP_SHARE)


def lapse_margin_s(lease_s: float) -> float:
    """How long before its end a lease not renewed counts as lost."""
    return min(1.0, lease_s / 10)


def call_deadline_s(lease_s: float, interval_s: float) -> float:
    """The deadline of a claim, a release or an outcome write (see the module doc)."""
    return min(CALL_DEADLINE_CAP_S, max(CALL_DEADLINE_FLOOR_S, lease_s - interval_s))


@dataclass(frozen=True, slots=True)
class CallKind:
    """A kind of store call: `what` names it in the log; `deadline_s` bounds it;
    `retried` says whether its caller tries it again until it answers (a failing one keeps
    the store's incident open until then: rota.worker.store_health); `reaches_store`
    whether its answer proves that the store answers (not a duty's call, which may
    swallow its own errors, nor a renewal of no lease, which a store may answer without
    a statement)."""

    what: str
    deadline_s: float
    retried: bool = False
    reaches_store: bool = True


@dataclass(frozen=True, slots=True)
class GroupDeadlines:
    """The deadlines of one group's store calls, from its lease and heartbeat interval."""

    renewal_s: float  # one renewal try
    renewal_retry_s: float  # the wait before a failed renewal is tried again
    margin_s: float  # a lease not renewed counts as lost this long before its end
    call_s: float  # a claim, a release, an outcome write

    @classmethod
    def of(cls, options: WorkerGroupOptions) -> GroupDeadlines:
        lease_s = options.lease_duration.total_seconds()
        interval_s = options.heartbeat_interval.total_seconds()
        margin_s = lapse_margin_s(lease_s)
        window_s = lease_s - interval_s - margin_s
        # A heartbeat interval within the margin of the lease leaves no window: a try
        # then gets a tenth of the interval, and one failure may lose the lease.
        renewal_s = min(RENEWAL_DEADLINE_CAP_S,
                        window_s / 2 if window_s > 0 else interval_s / 10)
        return cls(
            renewal_s=renewal_s,
            renewal_retry_s=min(RENEWAL_RETRY_CAP_S, interval_s, renewal_s / 4),
            margin_s=margin_s,
            call_s=call_deadline_s(lease_s, interval_s),
        )
