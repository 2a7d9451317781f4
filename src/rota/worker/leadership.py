"""The leader election duty: one worker process runs the store's maintenance.

Theory of operation: the maintenance duties (the lease sweeper, retention, schedule firing,
SQLite's WAL checkpoint) act on the whole store, and each is safe when several processes
run it at once (the store fences expiries, purges and fires). Run by every worker, their
load on the store would grow with the number of workers; so the workers of one App elect
one of them, through a leader lease in the store (`LeaderStore`), and only it runs them.

`Election` is a duty of every worker. It tries to take the lease at once when the worker
starts (so a lone worker leads after one round trip), then renews it every `renew_s` while
it leads. While another worker leads, a refused try tells it until when that worker's
lease runs, and it tries again just after that (at most `follow_s` later): by then a live
leader has renewed, so a follower tries about once per lease, and a dead leader is
replaced as its lease expires. Each try is one store call (`take_leadership`, a
compare-and-set fenced by the worker's id, `now` from the App's clock).

The lease lasts `ttl_s` (`LEADER_TTL_S`, shorter when the worker's job leases are: the
cadences shrink with it); the leader counts its term from the moment it sent the renewal
that succeeded, so it stops leading no later than the store lets another worker take over,
even while its store calls fail or hang: a leader that cannot renew loses the lead when
its term runs out. A graceful stop gives the lease up as soon as the stop begins (and
again at `at_stop`, if the first try was cut short): a worker starting then (a rolling
deploy) takes it at its first try, and otherwise a follower at its next one (no later
than the lease would have expired).

The maintenance duties run inside `Election.while_leading(duty)`: started when this worker
becomes the leader, cancelled when it stops leading, started again at its next term.
Their state lives on their objects, so a new term resumes them.

The lease's name (`maintenance_lease_name`) is per App configuration: the retention and
the schedules' definitions go into it, so two services sharing one store each elect their
own leader (each has its own retention and schedules), and during a rolling deploy that
changes a schedule, the new code's workers elect their own leader, which registers and
fires the new definition (docs/decisions/0040).

Imports the core, the store contract and the duty protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Sequence
from datetime import timedelta

from rota.core.clock import Clock
from rota.core.retention import Retention
from rota.core.schedules import Schedule
from rota.store.base import Store
from rota.worker.duty import Duty, DutyRuntime

logger = logging.getLogger("rota")

# How long a lease lasts, how often the leader renews it, and the longest a follower waits
# between two tries (docs/operations.md, "Maintenance").
LEADER_TTL_S = 10.0
RENEW_S = 3.0
FOLLOW_S = 10.0
# A follower tries again this long after the holder's lease expires.
EXPIRY_MARGIN_S = 0.05
# After a failed try, wait this long before the next (doubling), at most the cadence.
FIRST_RETRY_S = 0.25


def maintenance_lease_name(retention: Retention | None, schedules: Sequence[Schedule]) -> str:
    """The name of the maintenance lease of an App with this retention and these schedules:
    `maintenance` with a digest of both (see the module docstring)."""
    kept = ("keeps everything" if retention is None or retention.keeps_everything
            else f"{retention.succeeded}|{retention.failed}|{retention.interval}")
    parts = [kept, *sorted(f"{s.name}={s.definition}" for s in schedules)]
    digest = hashlib.blake2b("\n".join(parts).encode(), digest_size=6).hexdigest()
    return f"maintenance:{digest}"


class Election:
    """Takes and keeps the maintenance lease for one worker process (a `Runtime` duty).

    Args:
        store: the App's store (its leader leases: `LeaderStore`).
        clock: where "now" comes from (the App's clock, the store's time).
        name: the lease's name (`maintenance_lease_name`).
        owner: this worker process's id (the worker registry's).
        job_lease_s: the shortest `lease_duration` of the worker's groups: when it is
            shorter than `LEADER_TTL_S`, the three defaults below shrink in proportion.
        ttl_s, renew_s, follow_s: the lease's length, the leader's cadence and a
            follower's longest wait, in seconds (default `LEADER_TTL_S`, `RENEW_S`,
            `FOLLOW_S`); `renew_s` must be shorter than `ttl_s`.
    """

    def __init__(
        self, store: Store, clock: Clock, name: str, owner: str, *,
        job_lease_s: float | None = None, ttl_s: float | None = None,
        renew_s: float | None = None, follow_s: float | None = None,
    ) -> None:
        # The module's constants are read here, so that tests may shorten them. A lease
        # never outlasts the job leases it protects: a dead leader's own jobs then come
        # back as soon as a live worker's would.
        scale = 1.0 if job_lease_s is None else min(1.0, job_lease_s / LEADER_TTL_S)
        ttl_s = LEADER_TTL_S * scale if ttl_s is None else ttl_s
        renew_s = RENEW_S * scale if renew_s is None else renew_s
        follow_s = FOLLOW_S * scale if follow_s is None else follow_s
        if not 0 < renew_s < ttl_s or follow_s <= 0:
            raise ValueError(f"an election needs 0 < renew_s < ttl_s and follow_s > 0; got "
                             f"renew_s={renew_s}, ttl_s={ttl_s}, follow_s={follow_s}")
        self.store = store
        self.clock = clock
        self.name = name
        self.owner = owner
        self.ttl_s = ttl_s
        self.renew_s = renew_s
        self.follow_s = follow_s
        # Owned by the loop thread; kept here so that a restarted duty resumes.
        self.leading = False
        self.terms = 0  # how many times this worker became the leader
        self._leading = asyncio.Event()
        self._following = asyncio.Event()
        self._following.set()
        self._term_end: asyncio.TimerHandle | None = None
        self._failures = 0

    # -- the duty ---------------------------------------------------------------------------

    async def __call__(self, runtime: DutyRuntime) -> None:
        """Run as a duty of `runtime`: try at once, then on the cadence, until it stops."""
        store = self.store
        while not runtime.stopping:
            delay_s = await self.step(store, runtime)
            await runtime.sleep_unless_stopping(delay_s)
        await self.give_up(runtime)

    async def step(self, store: Store, runtime: DutyRuntime) -> float:
        """One try to take or renew the lease; returns the seconds until the next."""
        loop = asyncio.get_running_loop()
        sent_at = loop.time()
        now = self.clock.now()
        try:
            lease = await runtime.store_call(store.take_leadership, self.name, self.owner,
                                             now, timedelta(seconds=self.ttl_s))
        except Exception as error:
            self._failures += 1
            delay_s: float = FIRST_RETRY_S * 2.0 ** min(self._failures - 1, 16)
            if self._failures == 1:
                logger.warning("leader election: trying the maintenance lease failed (%s); "
                               "retrying in %.2f s%s", error, delay_s,
                               ", leading until the lease runs out" if self.leading else "")
            return min(delay_s, self.renew_s if self.leading else self.follow_s)
        if self._failures:
            logger.warning("leader election works again after %d failed tries",
                           self._failures)
            self._failures = 0
        if lease is None or lease.owner != self.owner:
            if self.leading:
                self._lose("another worker holds the maintenance lease")
            if lease is None:  # lost a race to create it: someone holds it now
                return FIRST_RETRY_S
            # Try again as the holder's lease expires (a dead holder is replaced then).
            left_s = (lease.expires_at - now).total_seconds() + EXPIRY_MARGIN_S
            return min(max(left_s, EXPIRY_MARGIN_S), self.follow_s)
        if self._term_end is not None:
            self._term_end.cancel()
        self._term_end = loop.call_at(
            sent_at + self.ttl_s, self._lose,
            f"its lease ran out ({self.ttl_s:g} s without a renewal)")
        if not self.leading:
            self._win()
        return self.renew_s

    async def give_up(self, runtime: DutyRuntime) -> None:
        """Stop leading and give the lease up, so another worker takes over at once."""
        was_leading = self.leading
        if was_leading:
            self._lose("the worker is stopping")
        if not was_leading:
            return
        try:
            await runtime.store_call(self.store.give_up_leadership, self.name, self.owner)
        except Exception as error:
            logger.warning("leader election: giving the maintenance lease up failed (%s); "
                           "another worker takes over when it expires", error)

    async def at_stop(self, runtime: DutyRuntime) -> None:
        """At a graceful stop: give the lease up if the duty could not (cancelled)."""
        await self.give_up(runtime)

    # -- terms ------------------------------------------------------------------------------

    def _win(self) -> None:
        self.leading = True
        self.terms += 1
        self._following.clear()
        self._leading.set()
        logger.info("this worker now runs the store's maintenance (lease sweeps, retention, "
                    "schedules)")

    def _lose(self, why: str) -> None:
        if self._term_end is not None:
            self._term_end.cancel()
            self._term_end = None
        if not self.leading:
            return
        self.leading = False
        self._leading.clear()
        self._following.set()
        logger.info("this worker no longer runs the store's maintenance: %s", why)

    # -- the duties it gates ----------------------------------------------------------------

    def while_leading(self, duty: Duty) -> Duty:
        """`duty`, run only while this worker leads: started at each term, cancelled when
        it ends. A duty that returns while leading (the worker is stopping) ends it."""

        async def gated(runtime: DutyRuntime) -> None:
            while not runtime.stopping:
                await self._leading.wait()
                task = asyncio.create_task(duty(runtime))
                lost = asyncio.create_task(self._following.wait())
                try:
                    await asyncio.wait({task, lost}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    lost.cancel()
                    if not task.done():
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task
                if not task.cancelled() and task.exception() is not None:
                    task.result()  # to the supervisor, which starts this again
                if task.done() and not task.cancelled():
                    await self._following.wait()  # done for this term

        gated.__qualname__ = f"while_leading({duty!r})"
        return gated

    def __repr__(self) -> str:
        return f"Election({self.name!r}, owner={self.owner!r}, leading={self.leading})"
