"""A group's outcome writer: finished jobs' outcomes into the store, in batches.

Job tasks append each finished `Held` to `finished` (and set `ready` if it was empty).
The writer task lets outcomes gather for up to `OUTCOME_LINGER_S` unless `OUTCOME_BATCH`
are already waiting, then writes them: all successes of a batch in one `complete` call,
the other outcomes one call each, on a store thread. Fewer, larger writes, because each
write competes with the next claim for the database and the GIL (docs/decisions/0026);
the jobs' leases are held, and renewed, meanwhile. Each write has a deadline
(rota.worker.deadlines). A write that fails with `StoreError` is retried with backoff,
its jobs still held (the failure is logged by the runtime's store health, once per
incident); anything else goes to the supervisor, which starts the writer again with the
outcomes still pending.

Usually a pass gets there first: when the store's `claim` takes `outcomes`, the pass
takes what waits (`take`) and its claim writes them in the claim's own transaction;
`carried_written` then settles them, and a claim that failed gives them back.

A written (or fenced) attempt is no longer held: `done` drops it from the group's held
attempts, by (job id, attempt), so a fenced attempt N never drops attempt N+1 of the same
job that the group may hold beside it, and counts it in `served` per Queue and outcome.

Invariants the per-job path relies on: `ready` is set whenever `finished` holds anything,
so only the first outcome in sets it; `all_written` may be stale-set while outcomes wait
(job tasks do not clear it), so `flush`, its one reader, clears it before it waits.
Imports the core, the store contract and the worker's leaf modules.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime

from rota.core.jobs import JobRecord
from rota.core.outcomes import Outcome, Succeeded
from rota.core.plurals import counted
from rota.store.base import StoreError
from rota.worker.backoff import Backoff
from rota.worker.deadlines import CallKind
from rota.worker.group import log_recorded, record_outcome, record_successes, warn_leases_lost
from rota.worker.held import Held
from rota.worker.host import GroupHost
from rota.worker.outcome_names import OUTCOME_NAMES

logger = logging.getLogger("rota")

# Outcomes gather for up to this long, unless this many are already waiting.
OUTCOME_LINGER_S = 0.01
OUTCOME_BATCH = 100
# How long shutdown keeps trying to write outcomes still pending after the grace period.
FLUSH_TIMEOUT_S = 5.0


class WritesCutShort(StoreError):
    """A write that failed with a `StoreError` after writing `written` (so that the
    runtime counts the failure and those are still done)."""

    def __init__(self, error: StoreError, written: list[Held]) -> None:
        super().__init__(str(error))
        self.written = written


class OutcomeWriter:
    """Writes one group's finished outcomes (see the module docstring).

    Args:
        group: the group's name, for the log and the store's fencing.
        held: the group's held attempts by (job id, attempt); the writer drops the ones
            it wrote.
        host: the runtime.
        deadline_s: the deadline of one write.
    """

    def __init__(self, group: str, held: dict[tuple[int, int], Held], host: GroupHost,
                 deadline_s: float) -> None:
        self.group = group
        self.host = host
        self._held = held
        self._writes = CallKind(f"group {group}: outcome writes", deadline_s, retried=True)
        # Loop thread. Held jobs whose outcome is set, waiting to be written: appended by
        # job tasks, drained by the writer or a pass's claim.
        self.finished: list[Held] = []
        # Set by job tasks (whenever `finished` is not empty), cleared by the writer.
        self.ready = asyncio.Event()
        # Set by the writer when it has written everything; cleared by `flush` (its reader)
        # or when a write failed, so it may be stale-set while nobody waits on it.
        self.all_written = asyncio.Event()
        self.all_written.set()
        # Loop thread. Keys (job id, attempt) of the attempts whose outcomes are being
        # written now, by the writer or with a claim (each takes its batch out of
        # `finished`, and puts back what it could not write).
        self.writing: set[tuple[int, int]] = set()
        # Loop thread. Attempts whose outcomes were written since the group started, per
        # Queue and outcome type: counted as they are written, read through `served`.
        self._served: dict[str, dict[type, int]] = {}

    @property
    def served(self) -> dict[tuple[str, str], int]:
        """Attempts written since the group started, per (Queue, outcome name), from any
        thread (each level is copied at once, under the GIL)."""
        return {(queue, OUTCOME_NAMES[kind]): count
                for queue, counts in list(self._served.items())
                for kind, count in list(counts.items())}

    @property
    def busy(self) -> bool:
        """Whether an outcome waits or is being written."""
        return bool(self.finished or self.writing)

    def _write(self, batch: list[Held], now: datetime) -> tuple[list[Held], Exception | None]:
        """Store thread: write `batch`'s outcomes, successes in one call. Returns the ones
        written (applied or fenced) and the exception that stopped the rest, if any."""
        store = self.host.store
        written: list[Held] = []
        successes = [f for f in batch if isinstance(f.outcome, Succeeded)]
        results = [f.outcome.result_json for f in successes
                   if isinstance(f.outcome, Succeeded)]
        try:
            record_successes(store, [f.job for f in successes], now,
                             None if results.count(None) == len(results) else results,
                             group=self.group)
            written.extend(successes)
            for item in batch:
                outcome = item.outcome
                if not isinstance(outcome, Succeeded):
                    assert outcome is not None  # set before the job joined `finished`
                    record_outcome(store, item.job, outcome, now, self.group)
                    written.append(item)
        except StoreError as error:  # the runtime counts it; `written` is kept
            raise WritesCutShort(error, written) from error
        except Exception as error:  # returned, not raised, so `written` is kept
            return written, error
        return written, None

    def take(self) -> list[Held]:
        """Take every outcome waiting to be written, to write it now; `done` must follow,
        whatever happens."""
        batch, self.finished = self.finished, []
        self.writing.update([held.key for held in batch])  # a list: no generator
        return batch

    def done(self, batch: list[Held], written: list[Held]) -> None:
        """After a write of `batch` (taken by `take`): the jobs of `written` (applied or
        fenced) are no longer held; the rest go back to the writer."""
        self.writing.difference_update([held.key for held in batch])
        if len(written) < len(batch):
            done = {id(item) for item in written}
            self.finished[:0] = [item for item in batch if id(item) not in done]
            self.all_written.clear()
            self.ready.set()
        # Per job, so kept lean: one pop (by the key the Held carries), one count keyed by
        # the Queue's name and the outcome's type, no tuple to build and hash
        # (docs/benchmarks.md).
        served = self._served
        held_pop = self._held.pop
        for item in written:
            job = item.job
            held_pop(item.key, None)
            counts = served.get(job.queue)
            if counts is None:
                counts = served[job.queue] = {}
            kind = type(item.outcome)
            counts[kind] = counts.get(kind, 0) + 1
        if written and self.host.isolating:
            self.host.after_outcomes_written()

    def count_reported(self, jobs: Sequence[JobRecord], outcomes: Sequence[Outcome]) -> None:
        """Loop thread: count outcomes that the store wrote by itself (a claim's expired
        jobs) among the served ones, as `done` counts those written here."""
        served = self._served
        for job, outcome in zip(jobs, outcomes, strict=True):
            counts = served.get(job.queue)
            if counts is None:
                counts = served[job.queue] = {}
            kind = type(outcome)
            counts[kind] = counts.get(kind, 0) + 1

    def carried_written(self, carried: list[Held], applied: int | None) -> None:
        """After a pass whose claim was given `carried`: done if the claim applied them
        (`applied` of them took effect; logged as the writer logs its own writes), else
        (None) back to the writer."""
        if applied is None:
            self.done(carried, [])
            return
        log_recorded(self.group, ((held.job, held.outcome) for held in carried
                                  if held.outcome is not None))
        if applied < len(carried):
            warn_leases_lost(self.group, [held.job for held in carried], applied)
        self.done(carried, carried)

    async def run_forever(self) -> None:
        """The writer task: write whatever waits, with the linger, until cancelled."""
        backoff = Backoff()
        host = self.host
        if self.finished:
            self.ready.set()  # restarted by the supervisor with outcomes pending
        while True:
            await self.ready.wait()
            # No lingering while a suspect waits for the outcomes to be written.
            if (len(self.finished) < OUTCOME_BATCH and not host.stopping
                    and not host.isolating):
                await host.sleep_unless_stopping(OUTCOME_LINGER_S)
            self.ready.clear()
            while self.finished:
                batch = self.take()
                now = host.clock.now()
                written: list[Held] = []
                error: Exception | None = None
                try:
                    written, error = await host.call_store(self._writes, self._write, batch,
                                                           now)
                except WritesCutShort as cut_short:
                    written, error = cut_short.written, cut_short
                except StoreError as abandoned:  # no answer in time: written unknown
                    error = abandoned
                finally:
                    self.done(batch, written)
                if error is not None and not isinstance(error, StoreError):
                    raise error  # the supervisor logs it and starts this duty again
                if error is not None:
                    delay_s = backoff.next_delay_s()
                    logger.debug(
                        "group %s: writing %s failed (retrying in %.2f s; the leases "
                        "are kept): %s", self.group, counted(len(batch) - len(written), "outcome"),
                        delay_s, error,
                    )
                    await asyncio.sleep(delay_s)
                else:
                    backoff.reset()
            self.all_written.set()

    async def flush(self) -> None:
        """Give the writer a bounded time (`FLUSH_TIMEOUT_S`) to write what is pending."""
        if not self.finished and not self.writing:
            return
        self.all_written.clear()  # the writer sets it again once everything is written
        self.ready.set()
        try:
            await asyncio.wait_for(self.all_written.wait(), FLUSH_TIMEOUT_S)
        except TimeoutError:
            logger.warning("group %s: %s not written; those jobs run "
                           "again when their leases expire", self.group,
                           counted(len(self.finished), "outcome"))
