"""Claims and the outcomes written in batches on PostgreSQL: `claim` (with the outcomes
it carries and the Queues it probes), `complete`, `release` and `heartbeat`.

A claim locks due jobs with `FOR UPDATE SKIP LOCKED` on the partial index of scheduled
jobs, so finished rows never slow it, and skips paused Queues (`queue_settings`, no
cache). Over a Queue with a limit it is a transaction instead: lock the Queue's settings
row, then claim with a snapshot taken after the lock (claim.sql's part room says why).
Batched outcomes are one `UPDATE ... FROM unnest(...)`, fenced by (id, owner, attempt).

Imports the core, the store contract, the PostgreSQL modules and psycopg.
"""

from __future__ import annotations

import logging
import operator
import threading
from collections.abc import Mapping, Sequence
from contextlib import suppress
from datetime import datetime
from typing import Final

import psycopg

from rota.core.jobs import (
    CANCELLED_ON_REQUEST,
    JobRecord,
    JobState,
    Lease,
    decode_stored_arguments,
    new_record,
)
from rota.core.meta import decode_meta
from rota.core.outcomes import Succeeded
from rota.core.progress import worker_of_owner
from rota.core.rates import cap_by_tokens, settle, stored_rate
from rota.store.base import Claimed, LeaseOutcome, Renewal, check_outcomes, claim_caps
from rota.store.corrupt import quarantine_undecodable
from rota.store.family_settings import (
    apply_families,
    families_of,
    held,
    limiting,
)
from rota.store.postgres.connection import PostgresConnection
from rota.store.postgres.floors import FloorCheck, reached_positions
from rota.store.postgres.retry import retried
from rota.store.postgres.schema import (
    COMPLETED_PARENTS,
    COMPLETING,
    int_array,
    lease_columns,
    text_array,
    utc,
)
from rota.store.sql_base import Row

log = logging.getLogger(__name__)


def _leased_record(row: Row, owner: str, lease_expires_at: datetime, started_at: datetime,
                   worker: str) -> JobRecord:
    """A row of claim.sql, which leaves out what the claim itself set."""
    (job_id, name, queue, attempt, due_at, args_json, kwargs_json, last_error,
     created_at, trace_context, parents, meta, expires_at) = row
    # A row that cannot be decoded gives a record with `arguments_error` set instead of
    # raising (rota.store.corrupt).
    args, kwargs, arguments_error = decode_stored_arguments(args_json, kwargs_json)
    # Every field in order (new_record: ~5x cheaper than JobRecord's keywords): finished_at,
    # result, cancel_requested, key, last_traceback and progress are those of a job just
    # leased; errors are left out (running it does not need them).
    return new_record(
        job_id, name, queue, JobState.LEASED, attempt, due_at, args, kwargs, last_error,
        created_at, None, owner, lease_expires_at, started_at, None, False, arguments_error,
        None, trace_context, None, () if parents is None else tuple(parents),
        {} if meta is None else decode_meta(meta), 0, expires_at, None, (), worker, None,
    )


# A row of claim.sql's expires_at (a datetime, or None: never expires).
_EXPIRES_AT: Final = operator.itemgetter(12)


def _expired_row(row: Row, now: datetime) -> bool:
    """Whether a row of claim.sql is a job the claim ended past its expires_at (its
    expired CTE) rather than leased: only those have an expires_at before `now`."""
    return row[12] is not None and row[12] < now


def _expired_record(row: Row, now: datetime) -> JobRecord:
    """The record, as ended, of a row of claim.sql's expired CTE."""
    (job_id, name, queue, attempt, due_at, args_json, kwargs_json, last_error,
     created_at, trace_context, parents, meta, expires_at) = row
    args, kwargs, arguments_error = decode_stored_arguments(args_json, kwargs_json)
    return JobRecord(
        id=job_id, name=name, queue=queue, state=JobState.CANCELLED, attempt=attempt,
        due_at=due_at, args=args, kwargs=kwargs, last_error=last_error,
        created_at=created_at, finished_at=now, arguments_error=arguments_error,
        trace_context=trace_context, parents=() if parents is None else tuple(parents),
        meta={} if meta is None else decode_meta(meta), expires_at=expires_at,
    )


class PostgresClaims(PostgresConnection):
    # A worker writes its outcomes with its outcome writer, on another pooled connection
    # while its next claim runs, rather than in the claim (`claim(..., outcomes=...)`
    # still works): with them, the claim every handler of the next pass waits for took
    # longer than the two statements side by side (docs/decisions/0016).
    outcomes_beside_claims = True

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
        # A Queue named twice (without limits) would be walked twice, its rows counted
        # twice against the limit; the first mention decides its place.
        caps = claim_caps(queues, limit, limits)
        check_outcomes(outcomes)
        if limit <= 0 or not caps or all(cap <= 0 for _, cap in caps):
            if outcomes:
                _, found, applied = self._claim_with_outcomes(
                    None, list(probe), outcomes, utc(now))
                return Claimed(due=[str(row[0]) for row in found if row[1]], applied=applied)
            if not probe:
                return Claimed()
            found, _ = self._run("probe", self._probe_params(list(probe), utc(now)))
            return Claimed(due=[str(row[0]) for row in found if row[1]])
        names = [queue for queue, _ in caps]
        worker = worker_of_owner(owner)
        if checks := self.claim_floors.due_checks(names):
            self._check_floors(checks, utc(now))
        floor_dues, floor_ids, token = self.claim_floors.begin(names)
        params = {
            "queues": text_array(names),
            "limits": int_array([min(cap, limit) for _, cap in caps]),
            "limit": limit,
            "now": utc(now),
            "owner": owner,
            "worker": worker,
            "lease_expires_at": utc(lease_expires_at, "lease_expires_at"),
            "floor_dues": floor_dues,
            "floor_ids": int_array(floor_ids),
        }
        probed: list[str] = []
        if probe or limits is not None:
            # A planner's claim: probe its Queues (and those asked) in the same round trip.
            probed = list(dict.fromkeys([*(queue for queue, _ in caps), *probe]))
        try:
            rows, found, applied, rated, next_token_at = self._claim_rows(
                params, caps, limit, probed, outcomes, token, utc(now))
        except BaseException:
            # Its locks were rolled back: jobs it skipped past may be claimable again.
            self.claim_floors.forget(names, token)
            raise
        wanted = set(probe)
        expired: list[JobRecord] = []
        if any(map(_EXPIRES_AT, rows)):  # jobs with an expiry among them (in C: per job)
            expired = [_expired_record(row, now) for row in rows if _expired_row(row, now)]
            rows = [row for row in rows if not _expired_row(row, now)]
        return Claimed(
            quarantine_undecodable(
                self, [_leased_record(row, owner, lease_expires_at, now, worker)
                       for row in rows],
                now),
            due=[str(row[0]) for row in found if row[1] and row[0] in wanted],
            controlled=[*rated, *(str(row[0]) for row in found if row[2])],
            applied=applied,
            next_token_at=next_token_at,
            expired=expired,
        )

    def _claim_rows(
        self, params: dict[str, object], caps: Sequence[tuple[str, int]], limit: int,
        probed: list[str], outcomes: Sequence[LeaseOutcome], token: int, now: datetime,
    ) -> tuple[list[Row], list[Row], int, list[str], datetime | None]:
        """Run the claim (with its outcomes and probe): the rows leased, the probe's rows,
        the outcomes applied, the rated Queues asked and when the first of those held back
        by its tokens has one again; then raise the floors of its Queues."""
        applied = 0
        if outcomes:
            rows, found, applied = self._claim_with_outcomes(params, probed, outcomes, now)
        elif probed:
            rows, found = self._claim_and_probe(params, probed)
        else:
            rows, _ = self._run("claim", params)
            found = []
        next_token_at: datetime | None = None
        rated: list[str] = []
        limited = bool(rows) and rows[0][0] is None
        if limited:  # a limit or a rate: claim.sql leased nothing
            # (With outcomes, they were committed by then: see the module doc of base.)
            rows, rated, next_token_at = self._claim_limited(params, caps, limit, now)
            if probed:  # the probe ran before this claim: ask again what it left
                found, _ = self._run("probe", self._probe_params(probed, now))
        self.claim_floors.raise_(token, reached_positions(
            [(queue, min(cap, limit)) for queue, cap in caps], limit,
            [(row[2], row[4], row[0]) for row in rows], now, exhaustive=not limited))
        return rows, found, applied, rated, next_token_at

    def _claim_with_outcomes(
        self, params: Mapping[str, object] | None, probed: list[str],
        outcomes: Sequence[LeaseOutcome], now: datetime,
    ) -> tuple[list[Row], list[Row], int]:
        """The outcomes' statements, then claim.sql (unless `params` is None) and
        probe.sql (if `probed`), in one transaction sent as one pipeline: BEGIN, the
        statements and COMMIT go out together, one network round trip and one commit.
        Outcomes that are all successes (a drain's usual pass) ride in the claim
        statement itself (claim_completing); alone, that is one statement and needs no
        BEGIN or COMMIT.
        Returns the claim's rows, the probe's rows and how many outcomes were applied."""
        statements = self._outcome_statements(outcomes, now)
        claim_name, completing = "claim", False
        if params is not None and len(statements) == 1 and statements[0][0] in COMPLETING:
            claim_name, completing = COMPLETING[statements[0][0]], True
            params = {**statements[0][1], **params}
            statements = []
            if not probed:
                rows, _ = self._run(claim_name, params)
                if rows[0][0] == COMPLETED_PARENTS:  # children were released: claim again
                    return self._run("claim", params)[0], [], rows[0][3]
                return rows[1:], [], rows[0][3]
        def transaction() -> tuple[int, bool, list[Row], list[Row]]:
            with self._cursor("claim") as cursor:
                conn = cursor.connection
                writes: list[psycopg.Cursor[Row]] = []
                claimed = conn.cursor() if params is not None else None
                second = conn.cursor() if probed else None
                try:
                    # BEGIN and COMMIT as plain statements: psycopg's transaction() syncs
                    # the pipeline as it starts and ends (four round trips instead of one,
                    # counted).
                    with conn.pipeline():
                        cursor.execute("BEGIN")
                        for name, statement_params in statements:
                            write = conn.cursor()
                            write.execute(self._query(name), statement_params)
                            writes.append(write)
                        if claimed is not None:
                            claimed.execute(self._query(claim_name), params)
                        if second is not None:
                            second.execute(self._query("probe"),
                                           self._probe_params(probed, now))
                        cursor.execute("COMMIT")
                except psycopg.Error:
                    # A failed statement aborts the transaction, and the pipeline skips the
                    # rest (COMMIT included): roll back rather than hand the pool a failed
                    # transaction.
                    with suppress(psycopg.Error):
                        conn.rollback()
                    raise
                applied = sum(write.rowcount for write in writes)
                rows = claimed.fetchall() if claimed is not None else []
                released = False
                if completing:
                    applied, released, rows = (rows[0][3], rows[0][0] == COMPLETED_PARENTS,
                                               rows[1:])
                found = second.fetchall() if second is not None else []
                return applied, released, rows, found

        applied, released, rows, found = retried(transaction)
        if released and params is not None:  # children were released: claim again
            rows, found = self._claim_and_probe(params, probed)
        return rows, found, applied

    def _outcome_statements(
        self, outcomes: Sequence[LeaseOutcome], now: datetime
    ) -> list[tuple[str, dict[str, object]]]:
        """The statements that apply `outcomes`, as `complete`, `retry` and the other
        outcome methods run them: every success in one statement."""
        statements: list[tuple[str, dict[str, object]]] = []
        successes = [(lease, outcome.result_json) for lease, outcome in outcomes
                     if isinstance(outcome, Succeeded)]
        if successes:
            leases = [lease for lease, _ in successes]
            results = [result for _, result in successes]
            if all(result is None for result in results):
                statements.append(("complete", {"now": now, **lease_columns(leases)}))
            else:
                statements.append(("complete_results", {
                    "now": now, "results": results, **lease_columns(leases)}))
        statements.extend(self._single_outcomes(outcomes, now))
        return statements

    def _probe_params(self, probed: list[str], now: datetime) -> dict[str, object]:
        floor_dues, floor_ids = self.claim_floors.positions(probed)
        return {"probe": probed, "now": now, "probe_floor_dues": floor_dues,
                "probe_floor_ids": int_array(floor_ids)}

    def _check_floors(self, checks: list[FloorCheck], now: datetime) -> None:
        """Look for a job due at `now` under each of these floors (floor_check.sql), in a
        thread of its own: while a snapshot is held the scan under a floor walks every job
        claimed since its last check, and no claim waits for it (floors.py). Tells the
        floors what it found; a check that fails removes them (the claims then scan from
        the start)."""

        def check() -> None:
            try:
                rows, _ = self._run("floor_check", {
                    "queues": text_array([each.queue for each in checks]),
                    "from_dues": [each.from_due for each in checks],
                    "from_ids": int_array([each.from_id for each in checks]),
                    "floor_dues": [each.due_at for each in checks],
                    "floor_ids": int_array([each.job_id for each in checks]),
                    "now": now})
            except Exception:  # a store closing, a link lost: the floors go
                log.debug("claim floor check failed", exc_info=True)
                for each in checks:
                    self.claim_floors.checked(each.queue, None, failed=True)
                return
            found = {str(queue): (due_at, int(job_id)) for queue, due_at, job_id in rows}
            for each in checks:
                self.claim_floors.checked(each.queue, found.get(each.queue))

        threading.Thread(target=check, name="rota-floor-check", daemon=True).start()

    def _claim_and_probe(
        self, params: Mapping[str, object], probed: list[str]
    ) -> tuple[list[Row], list[Row]]:
        """claim.sql and probe.sql pipelined: one network round trip; the probe runs after
        the claim (each its own transaction), so it sees what the claim left."""
        now = params["now"]
        assert isinstance(now, datetime)

        def pipelined() -> tuple[list[Row], list[Row]]:
            with self._cursor("claim") as cursor:
                conn = cursor.connection
                with conn.pipeline(), conn.cursor() as second:
                    cursor.execute(self._query("claim"), params)
                    second.execute(self._query("probe"), self._probe_params(probed, now))
                    rows = cursor.fetchall()
                    found = second.fetchall()
                return rows, found

        # The probe only reads: a deadlock can come from the claim alone, which then
        # committed nothing, so the pair runs again.
        return retried(pipelined)

    def _claim_limited(
        self, params: Mapping[str, object], caps: Sequence[tuple[str, int]], limit: int,
        now: datetime,
    ) -> tuple[list[Row], list[str], datetime | None]:
        """A claim over Queues of which some have a concurrency limit or a rate: lock their
        settings rows, then claim with a snapshot taken after the lock (claim.sql's part
        room says why), each rated Queue's take capped by its tokens, then write the buckets it
        took from, in one transaction. Returns the rows, the rated Queues asked, and when
        the first of those held back by their tokens has one again."""
        def transaction() -> tuple[list[Row], list[str], datetime | None]:
            with self._cursor("claim") as cursor, cursor.connection.transaction():
                cursor.execute(self._query("index_scans_only"))
                cursor.execute(self._query("family_settings"))
                families = families_of(cursor.fetchall())
                members = held([queue for queue, _ in caps], families)
                # Those under a family's limit or rate: rows to lock and to hold their
                # buckets (ensure_member_settings.sql); a pause needs none.
                locked = held(members, limiting(families))
                if locked:
                    cursor.execute(self._query("ensure_member_settings"),
                                   {"members": text_array(locked)})
                cursor.execute(self._query("lock_queue_limits"), {
                    "queues": params["queues"], "members": text_array(locked)})
                own = {str(row[0]): row for row in cursor.fetchall()}
                rated = {queue: stored_rate(*row[3:]) for queue, row in own.items()
                         if row[3] is not None}
                asks = [(queue, min(cap, limit)) for queue, cap in caps]
                family_controlled: list[str] = []
                if members:

                    def count_leased(limits: Mapping[str, int]) -> dict[str, int]:
                        cursor.execute(self._query("count_leased"), {
                            "queues": text_array(list(limits)),
                            "caps": int_array(list(limits.values()))})
                        return {str(row[0]): int(row[1]) for row in cursor.fetchall()}

                    family = apply_families(asks, members, families, own, count_leased)
                    asks, family_controlled = family.asks, family.controlled
                    rated.update(family.rated)
                if not rated and not members:
                    cursor.execute(self._query("claim_limited"), params)
                    return cursor.fetchall(), [], None
                asks, starved = cap_by_tokens(rated, asks, now)
                capped = {**params, "limits": int_array([count for _, count in asks])}
                cursor.execute(self._query("claim_limited"), capped)
                rows = cursor.fetchall()
                taken: dict[str, int] = {}
                for row in rows:
                    if row[2] in rated and not _expired_row(row, now):  # (expired: no token)
                        taken[row[2]] = taken.get(row[2], 0) + 1
                buckets, next_token_at = settle(rated, taken, starved, now)
                if buckets:
                    cursor.execute(self._query("take_queue_tokens"), {
                        "queues": text_array(list(buckets)),
                        "empty_us": int_array([b.empty_us for b in buckets.values()]),
                        "empty_rem": int_array([b.remainder for b in buckets.values()]),
                    })
                return rows, [*rated, *family_controlled], next_token_at

        return retried(transaction)

    def complete(
        self, leases: Sequence[Lease], now: datetime,
        results: Sequence[str | None] | None = None,
    ) -> int:
        if not leases:
            return 0
        if results is None or all(result is None for result in results):
            _, count = self._run("complete", {"now": now, **lease_columns(leases)})
            return count
        if len(results) != len(leases):
            raise ValueError(f"complete got {len(leases)} leases but {len(results)} results")
        _, count = self._run("complete_results", {
            "now": now, "results": list(results), **lease_columns(leases),
        })
        return count

    def release(self, leases: Sequence[Lease], now: datetime) -> int:
        if not leases:
            return 0
        _, count = self._run("release", {
            "now": utc(now), "cancelled_error": CANCELLED_ON_REQUEST, **lease_columns(leases),
            **self._hints,
        })
        return count

    def heartbeat(
        self, leases: Sequence[Lease], now: datetime, lease_expires_at: datetime
    ) -> Renewal:
        if not leases:
            return Renewal()
        rows, _ = self._run("heartbeat", {
            "now": utc(now), "lease_expires_at": utc(lease_expires_at, "lease_expires_at"),
            **lease_columns(leases),
        })
        return Renewal((row[0] for row in rows), (row[0] for row in rows if row[1]))

    def cancel_requests(self, job_ids: Sequence[int]) -> set[int]:
        if not job_ids:
            return set()
        rows, _ = self._run("cancel_requests", {
            "ids": int_array([int(job_id) for job_id in job_ids])})
        return {row[0] for row in rows}
