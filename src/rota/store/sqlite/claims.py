"""Claims and the outcomes written in batches on SQLite: `claim` (with the outcomes it
carries and the Queues it probes), `complete`, `release` and `heartbeat`. A claim is one
write transaction: its outcomes, one `UPDATE ... RETURNING` per Queue (or one compound
statement for many), each an index range scan of at most `limit` claimable rows, then
the job counts of what it moved.

Imports only the standard library, the core, the store contract and the SQLite modules.
"""

from __future__ import annotations

import functools
import json
import operator
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Final

from rota.core.jobs import (
    CANCELLED_ON_REQUEST,
    JobRecord,
    JobState,
    Lease,
    decode_result,
    decode_stored_arguments,
    new_record,
)
from rota.core.meta import decode_meta
from rota.core.outcomes import Succeeded
from rota.core.progress import worker_of_owner
from rota.core.rates import RatedQueue, cap_by_tokens, settle, stored_rate
from rota.store.base import Claimed, LeaseOutcome, Renewal, check_outcomes, claim_caps
from rota.store.corrupt import quarantine_undecodable
from rota.store.family_settings import (
    FamilyAsks,
    apply_families,
    families_of,
    held,
)
from rota.store.sql_base import Row
from rota.store.sql_template import fill
from rota.store.sqlite.connection import SQLiteConnection
from rota.store.sqlite.schema import at, count_jobs, move, sql, us

# claim_many: at most this many Queues in one statement (SQLite allows 500 arms in a
# compound SELECT); a round asking more runs claim.sql Queue after Queue.
MAX_ARMS: Final = 200
# The parameter names of claim_many's arms, by arm (built once, not per Queue asked).
ARM_KEYS: Final = tuple((f"queue_{index}", f"limit_{index}") for index in range(MAX_ARMS))


@functools.cache
def claim_many_sql(count: int) -> str:
    """claim_many with `count` arms (claim.sql's part arm, its parameters numbered)."""
    arm = sql("claim_many_arm")
    arms = "\nUNION ALL\n".join(
        fill(arm, {"n": str(index)}, what="rota's sqlite claim_many_arm")
        for index in range(count))
    return fill(sql("claim_many"), {"picked": arms}, what="rota's sqlite claim_many")


# complete.sql: at most this many leases in one statement (4 parameters each, and the
# finish time: within SQLite's 999 on every version rota supports).
MAX_COMPLETED: Final = 200


def _fitting(asks: list[tuple[str, int]], limit: int) -> list[tuple[str, int]]:
    """The longest run of `asks` from the first (at most MAX_ARMS) whose counts fit in
    `limit` together: those can all be claimed by one statement."""
    total = 0
    for end, (_, count) in enumerate(asks[:MAX_ARMS]):
        total += count
        if total > limit:
            return asks[:end]
    return asks[:MAX_ARMS]


@functools.cache
def complete_sql(leases: int, results: bool) -> str:
    """complete.sql with `leases` rows of values; without `results`, each row's result is
    the literal NULL, not a bound None (binding None costs the sqlite3 module two failed
    attribute lookups, ~4k instructions: it looks for an adapter)."""
    width = 4 if results else 3
    return fill(sql("complete"), {"rows": ", ".join(
        f"(?{n}, ?{n + 1}, ?{n + 2}, {f'?{n + 3}' if results else 'NULL'})"
        for n in range(2, 2 + width * leases, width))}, what="rota's sqlite complete.sql")


# A probe of at least this many Queues first walks the Queues that have scheduled jobs
# (probe_scan.sql); a smaller one (a claim's own Queues) seeks each Queue it names.
_PROBE_SCAN_FROM: Final = 200
_PROBE_SCAN_SHARE: Final = 8  # ... and walks at most 1/8 of that many Queues
# claim.sql's rows in due order (due_at, id): a C key, no Python call per row.
_due_order: Final = operator.itemgetter(4, 0)


def _claimed(row: Row, owner: str, expires: datetime, started: datetime,
             times: dict[int, datetime], worker: str) -> JobRecord:
    """The record of a row the claim just leased (claim.sql's RETURNING columns): what the
    claim set comes from its parameters rather than back from the row. `times`, shared by
    the rows of one claim, memoises the conversions of their due and creation times (jobs
    enqueued together share them)."""
    (job_id, name, queue, attempt, due_at, args_json, kwargs_json, last_error, created_at,
     result, cancel_requested, finished_at, trace_context, parents, meta, expires_at) = row
    args, kwargs, arguments_error = decode_stored_arguments(args_json, kwargs_json)
    if (due := times.get(due_at)) is None:
        due = times[due_at] = at(due_at)
    if (created := times.get(created_at)) is None:
        created = times[created_at] = at(created_at)
    return new_record(
        job_id, name, queue, JobState.LEASED, attempt, due, args, kwargs, last_error,
        created, None if finished_at is None else at(finished_at), owner, expires, started,
        None if result is None else decode_result(result), bool(cancel_requested),
        arguments_error, None, trace_context, None,
        () if parents is None else tuple(json.loads(parents)),
        {} if meta is None else decode_meta(meta), 0,
        None if expires_at is None else at(expires_at), None, (), worker, None,
    )


# A row of claim.sql's expires_at (microseconds, or None: never expires).
_EXPIRES_AT: Final = operator.itemgetter(15)


def _with_expiry(rows: Sequence[Row]) -> bool:
    """Whether any of claim.sql's `rows` has an expires_at (checked in C: no Python call
    per job)."""
    return list(map(_EXPIRES_AT, rows)).count(None) < len(rows)


def _expired(row: Row, now_us: int) -> bool:
    """Whether a row of claim.sql is a job the claim ended past its expires_at rather
    than leased: only those have an expires_at before the claim's `now`."""
    return row[15] is not None and row[15] < now_us


def _leased(rows: Sequence[Row], now_us: int) -> int:
    """How many of claim.sql's `rows` the claim leased (the others it ended, expired)."""
    if not _with_expiry(rows):
        return len(rows)
    return len(rows) - sum(1 for row in rows if _expired(row, now_us))


def _expired_record(row: Row) -> JobRecord:
    """The record, as ended, of a row claim.sql ended past its expires_at."""
    (job_id, name, queue, attempt, due_at, args_json, kwargs_json, last_error, created_at,
     _result, _cancel, finished_at, trace_context, parents, meta, expires_at) = row
    args, kwargs, arguments_error = decode_stored_arguments(args_json, kwargs_json)
    return JobRecord(
        id=job_id, name=name, queue=queue, state=JobState.CANCELLED, attempt=attempt,
        due_at=at(due_at), args=args, kwargs=kwargs, last_error=last_error,
        created_at=at(created_at), finished_at=at(finished_at),
        arguments_error=arguments_error, trace_context=trace_context,
        parents=() if parents is None else tuple(json.loads(parents)),
        meta={} if meta is None else decode_meta(meta), expires_at=at(expires_at),
    )


class SQLiteClaims(SQLiteConnection):
    def claim(
        self,
        queues: Sequence[str],
        limit: int,
        *,
        now: datetime,
        owner: str,
        lease_expires_at: datetime,
        limits: Sequence[int] | None = None,
        probe: Sequence[str] = (),
        outcomes: Sequence[LeaseOutcome] = (),
    ) -> Claimed:
        caps = claim_caps(queues, limit, limits)
        check_outcomes(outcomes)
        if (limit <= 0 or not caps) and not outcomes:
            if not probe:
                return Claimed()
            with self._read("probing Queues") as conn:
                return Claimed(due=self._probe(conn, probe, now))
        now_us = us(now)
        worker = worker_of_owner(owner)
        params: dict[str, object] = {
            "now": now_us, "owner": owner, "lease_expires_at": us(lease_expires_at),
            "worker": worker,
        }
        claim_sql = sql("claim")
        claimed: list[Row] = []
        due: list[str] = []
        controlled: list[str] = []
        # One UPDATE per Queue inside one transaction: each is an index range scan of at
        # most `limit` rows, and the given Queue order needs no sort over all due jobs.
        asks = [(queue, min(cap, limit)) for queue, cap in caps if cap > 0]
        # What the claim and its successes move, counted in one statement (migration 8).
        changes: dict[tuple[str, str], int] = {}
        applied = 0
        settled: list[int] = []  # jobs with children that the outcomes finished
        released: list[str] = []
        with self._write("claiming") as conn:

            def came_short(queue: str) -> None:
                """`queue` gave fewer jobs than asked: say whether a control of it may
                be why."""
                if conn.execute(sql("queue_is_controlled"), {"queue": queue}).fetchone():
                    controlled.append(queue)

            if outcomes:  # applied first, in the claim's transaction (one commit)
                applied = self._apply_outcomes(conn, outcomes, now, changes, settled)
                if settled:
                    released = self._released_queues(conn, settled, params["now"])
            any_rate, any_family = (conn.execute(sql("controls_in_use")).fetchone()
                                    if asks else (False, False))
            rated = self._rated(conn, asks) if any_rate else {}
            family = self._family_asks(conn, asks) if any_family else None
            if family is not None:  # a family's settings hold some of the Queues asked
                asks = [(queue, count) for queue, count in family.asks if count > 0]
                rated = {**rated, **family.rated}
                controlled.extend(family.controlled)
            starved: set[str] = set()
            if rated:
                asks, starved = cap_by_tokens(rated, asks, now)
                controlled.extend(rated)
                asks = [(queue, count) for queue, count in asks if count > 0]
            head = _fitting(asks, limit)
            if len(head) > 1:
                # The Queues whose limits fit in the total, from the first: one statement
                # for all of them. With many tenant Queues this runs once per Queue asked,
                # for about one job each: the rows are sorted once, not per Queue, and the
                # loop over the Queues calls only `move` unless a Queue came back short.
                # (A planner's round asks its last Queue for all the room: it is claimed
                # below, for what the others left.)
                if all(count == 1 for _, count in head):
                    params["queues"] = json.dumps([queue for queue, _ in head])
                    rows = conn.execute(sql("claim_ones"), params).fetchall()
                else:
                    for (queue, count), (queue_key, limit_key) in zip(head, ARM_KEYS,
                                                                      strict=False):
                        params[queue_key] = queue
                        params[limit_key] = count
                    rows = conn.execute(claim_many_sql(len(head)), params).fetchall()
                rows.sort(key=_due_order)
                by_queue: dict[str, list[Row]] = {}
                for row in rows:
                    if (got := by_queue.get(row[2])) is None:
                        by_queue[row[2]] = [row]
                    else:
                        got.append(row)
                for queue, asked in head:
                    got = by_queue.get(queue)
                    if got is None:
                        came_short(queue)
                        continue
                    claimed += got
                    move(changes, queue, _leased(got, now_us), "scheduled", "leased")
                    if len(got) < asked:
                        came_short(queue)
                asks = asks[len(head):]
            for queue, cap in asks:
                remaining = limit - len(claimed)
                if remaining <= 0:
                    break
                params["queue"] = queue
                params["limit"] = asked = min(cap, remaining)
                # RETURNING order is unspecified: keep them in due order.
                rows = sorted(conn.execute(claim_sql, params).fetchall(), key=_due_order)
                claimed.extend(rows)
                move(changes, queue, _leased(rows, now_us), "scheduled", "leased")
                if len(rows) < asked:
                    came_short(queue)
            if _with_expiry(claimed):  # the children its expired jobs released, if any
                ended = [row[0] for row in claimed if _expired(row, now_us)]
                if ended:
                    released += self._released_queues(conn, ended, now_us)
            count_jobs(conn, changes)
            next_token_at = None
            if rated:
                taken = Counter(row[2] for row in claimed  # (expired: no token)
                                if row[2] in rated and not _expired(row, now_us))
                buckets, next_token_at = settle(rated, taken, starved, now)
                for queue, bucket in buckets.items():
                    conn.execute(sql("take_queue_tokens"), {
                        "queue": queue, "empty_us": bucket.empty_us,
                        "empty_rem": bucket.remainder})
            if probe:
                due = self._probe(conn, probe, now)
        expired: list[JobRecord] = []
        if _with_expiry(claimed):  # jobs with an expiry among them
            expired = [_expired_record(row) for row in claimed if _expired(row, now_us)]
            claimed = [row for row in claimed if not _expired(row, now_us)]
        if released:
            self._wake_others(released)
        if applied or expired:
            self._tell_finished()
        times: dict[int, datetime] = {}
        return Claimed(quarantine_undecodable(
            self, [_claimed(row, owner, lease_expires_at, now, times, worker)
                   for row in claimed], now),
            due, controlled, applied, next_token_at, expired)

    @staticmethod
    def _rated(conn: sqlite3.Connection, asks: Sequence[tuple[str, int]]
               ) -> dict[str, RatedQueue]:
        """Inside the claim's write transaction, when some Queue has a rate: the rated
        Queues among those asked, with their buckets."""
        rows = conn.execute(sql("queue_rates"), {
            "queues": json.dumps([queue for queue, _ in asks])}).fetchall()
        return {row[0]: stored_rate(*row[1:]) for row in rows}

    @staticmethod
    def _family_asks(conn: sqlite3.Connection, asks: Sequence[tuple[str, int]]
                     ) -> FamilyAsks | None:
        """Inside the claim's write transaction, when some family has a settings row:
        `asks` with the settings of the families that hold them applied
        (rota.store.family_settings), or None if no family with a setting holds any."""
        rows = conn.execute(sql("family_settings")).fetchall()
        if not rows:
            return None
        families = families_of(rows)
        members = held([queue for queue, _ in asks], families)
        if not members:
            return None
        own = {str(row[0]): row for row in conn.execute(
            sql("member_settings"), {"queues": json.dumps(members)}).fetchall()}

        def count_leased(limits: Mapping[str, int]) -> dict[str, int]:
            return {queue: int(conn.execute(sql("count_leased"), {"queue": queue}).fetchone()[0])
                    for queue in limits}

        return apply_families(asks, members, families, own, count_leased)

    def _apply_outcomes(
        self, conn: sqlite3.Connection, outcomes: Sequence[LeaseOutcome], now: datetime,
        changes: dict[tuple[str, str], int], settled: list[int],
    ) -> int:
        """Inside a write transaction: each outcome with the statement its own method runs
        (successes batched, their count moves added to `changes` for the caller to
        count; the finished jobs that have children added to `settled`); how many leases
        were still held."""
        applied = 0
        for name, params in self._single_outcomes(outcomes, now):
            # Each returns one row per lease held: the job's id if it has children.
            for (parent,) in conn.execute(sql(name), params).fetchall():
                applied += 1
                if parent is not None:
                    settled.append(parent)
        succeeded = [lease for lease, outcome in outcomes if isinstance(outcome, Succeeded)]
        results = [outcome.result_json for _, outcome in outcomes
                   if isinstance(outcome, Succeeded)]
        if succeeded:
            applied += self._complete_on(conn, succeeded, results, now, changes, settled)
        return applied

    def _probe(self, conn: sqlite3.Connection, queues: Sequence[str],
               now: datetime) -> list[str]:
        if len(queues) >= _PROBE_SCAN_FROM:
            # Many Queues (a survey or recheck of tenants, most of them empty): walk the
            # Queues that have scheduled jobs instead, if they are few beside the Queues
            # probed (10,000 empty tenants would cost 10,000 seeks a probe). A walked
            # Queue costs ~4 probed by name, so the walk gives up after an eighth: at
            # worst a probe then costs ~1.4 times the seeks.
            rows = conn.execute(sql("probe_scan"), {
                "now": us(now), "cap": len(queues) // _PROBE_SCAN_SHARE + 1}).fetchall()
            if any(row[0] is None for row in rows):
                wanted = set(queues)
                return [row[0] for row in rows if row[1] and row[0] in wanted]
        rows = conn.execute(sql("probe"), {"queues": json.dumps(list(queues)),
                                           "now": us(now)}).fetchall()
        return [row[0] for row in rows]

    def complete(
        self, leases: Sequence[Lease], now: datetime,
        results: Sequence[str | None] | None = None,
    ) -> int:
        if not leases:
            return 0
        changes: dict[tuple[str, str], int] = {}
        settled: list[int] = []
        released: list[str] = []
        with self._write("completing jobs") as conn:
            finished = self._complete_on(conn, leases, results, now, changes, settled)
            count_jobs(conn, changes)
            if settled:
                released = self._released_queues(conn, settled, us(now))
        if released:
            self._wake_others(released)
        if finished:
            self._tell_finished()
        return finished

    @staticmethod
    def _complete_on(conn: sqlite3.Connection, leases: Sequence[Lease],
                     results: Sequence[str | None] | None, now: datetime,
                     changes: dict[tuple[str, str], int], settled: list[int]) -> int:
        """Inside a write transaction: finish `leases` as succeeded (complete.sql, one
        statement per 200 leases) and add the jobs it moved to `changes` (the caller
        counts them, migration 8), and to `settled` those that have children (the caller
        wakes the Queues of the children released); how many were still held. Shared by
        `complete` and the outcomes a claim carries, so both count alike."""
        with_results = results is not None and results.count(None) < len(results)
        finished: list[Row] = []
        for start in range(0, len(leases), MAX_COMPLETED):
            batch = leases[start:start + MAX_COMPLETED]
            params: list[object] = [us(now)]
            if with_results:
                assert results is not None
                for lease, result in zip(batch, results[start:start + MAX_COMPLETED],
                                         strict=True):
                    params += (lease.job_id, lease.owner, lease.attempt, result)
            else:
                for lease in batch:
                    params += (lease.job_id, lease.owner, lease.attempt)
            finished += conn.execute(complete_sql(len(batch), with_results),
                                     params).fetchall()
        # One Queue and no job with children (rows alike: ids appear only beside those).
        if finished and finished[0][1] is None and finished.count(finished[0]) == len(finished):
            move(changes, finished[0][0], len(finished), "leased", "succeeded")
        else:
            for queue, jobs in Counter(queue for queue, _ in finished).items():
                move(changes, queue, jobs, "leased", "succeeded")
            settled += [parent for _, parent in finished if parent is not None]
        return len(finished)

    def release(self, leases: Sequence[Lease], now: datetime) -> int:
        if not leases:
            return 0
        finished_at = us(now)  # of a job whose cancel was requested: it ends cancelled
        rows = [(CANCELLED_ON_REQUEST, finished_at, lease.job_id, lease.owner, lease.attempt)
                for lease in leases]
        with self._write("releasing jobs") as conn:
            released: int = conn.executemany(sql("release"), rows).rowcount
        if released:  # (those whose cancel was requested ended cancelled)
            self._tell_finished()
        return released

    def heartbeat(
        self, leases: Sequence[Lease], now: datetime, lease_expires_at: datetime
    ) -> Renewal:
        if not leases:
            return Renewal()
        renewed: set[int] = set()
        cancel_requested: set[int] = set()
        params: dict[str, object] = {"now": us(now), "lease_expires_at": us(lease_expires_at)}
        heartbeat_sql = sql("heartbeat")
        with self._write("renewing leases") as conn:
            for lease in leases:
                params.update(id=lease.job_id, owner=lease.owner, attempt=lease.attempt)
                for job_id, cancel in conn.execute(heartbeat_sql, params):
                    renewed.add(job_id)
                    if cancel:
                        cancel_requested.add(job_id)
        return Renewal(renewed, cancel_requested)

    def cancel_requests(self, job_ids: Sequence[int]) -> set[int]:
        if not job_ids:
            return set()
        rows, _ = self._run("cancel_requests", {"ids": json.dumps(list(job_ids))},
                            "reading cancel requests")
        return {job_id for (job_id,) in rows}
