"""Writing jobs on SQLite: `enqueue`, `enqueue_on` (inside the caller's transaction),
the requeues, `purge`, a schedule's fire, and the other writes of schedules and of the
worker registry (their reads are shared: rota.store.sql_base). Every write that adds jobs
or makes them claimable again wakes the watchers of other processes after its commit.

Imports only the standard library, the core, the store contract and the SQLite modules.
"""

from __future__ import annotations

import json
import operator
import os
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import suppress
from datetime import datetime, timedelta
from pathlib import Path
from typing import Final

from rota.core.jobs import JobState, NewJob, check_new_jobs, check_requeueable, decode_arguments
from rota.core.retention import purgeable_states
from rota.core.schedules import FireOutcome, ScheduleRegistration
from rota.core.workers import ServedCount, WorkerInfo, minute_of
from rota.core.workflows import at_enqueue
from rota.store.base import LeaderLease, StoreError, check_leadership
from rota.store.registry_rows import policy_columns
from rota.store.sql_base import STATES
from rota.store.sqlite.connection import SQLiteConnection
from rota.store.sqlite.schema import count_jobs, schema_version_known, sql, us

_queue_of: Final = operator.attrgetter("queue")
_parents_of: Final = operator.attrgetter("parents")
# The plain enqueue statement for rows of each width (enqueue_rows).
def enqueue_rows(jobs: Sequence[NewJob], now: datetime) -> list[tuple[object, ...]]:
    """The rows enqueue.sql inserts, after the checks every store makes (nothing is
    written when one job is refused)."""
    check_new_jobs(jobs)  # the same jobs refused on every store
    created_at = us(now)
    rows: list[tuple[object, ...]] = []
    for job in jobs:
        decode_arguments(job.args_json, job.kwargs_json)  # bad JSON fails before writing
        rows.append(
            (job.name, job.queue, us(job.due_at, "due_at"), job.args_json, job.kwargs_json,
             created_at)
        )
    expiring = any(job.expires_at is not None for job in jobs)
    with_meta = any(job.meta_json is not None for job in jobs)
    if with_meta or expiring or any(job.trace_context is not None for job in jobs):
        rows = [(*row, job.trace_context) for row, job in zip(rows, jobs, strict=True)]
    if with_meta or expiring:  # configure(expires=...)
        rows = [(*row, _expires_us(job)) for row, job in zip(rows, jobs, strict=True)]
    if with_meta:  # configure(meta=...)
        rows = [(*row, job.meta_json) for row, job in zip(rows, jobs, strict=True)]
    return rows


def _expires_us(job: NewJob) -> int | None:
    """`job.expires_at` as stored (None: never expires)."""
    return None if job.expires_at is None else us(job.expires_at, "expires_at")


# insert_jobs's statement by the width of its rows (enqueue_rows).
_INSERT_BY_WIDTH: Final = {6: "enqueue", 7: "enqueue_traced", 8: "enqueue_expiring",
                            9: "enqueue_meta"}


def insert_jobs(conn: sqlite3.Connection | sqlite3.Cursor, rows: list[tuple[object, ...]],
                jobs: Sequence[NewJob]) -> list[int]:
    """Insert `rows` (of `jobs`) inside the caller's write transaction; their ids in
    order. A keyed job whose name and key a live job holds is not inserted: its id is that
    job's (an earlier job of the same batch included). Rows with a 7th column (a trace
    context) go through enqueue_traced.sql, with an 8th (an expiry) enqueue_expiring.sql,
    with a 9th (meta) enqueue_meta.sql."""
    if any(map(_parents_of, jobs)):
        return _insert_with_children(conn, rows, jobs)
    if all(job.key is None for job in jobs):
        conn.executemany(sql(_INSERT_BY_WIDTH[len(rows[0]) if rows else 6]), rows)
        count_jobs(conn, {(queue, "scheduled"): count
                          for queue, count in Counter(map(_queue_of, jobs)).items()})
        (last_id,) = conn.execute(sql("last_insert_id")).fetchone()
        # AUTOINCREMENT under the write lock hands one batch consecutive ids.
        return list(range(last_id - len(rows) + 1, last_id + 1))
    ids: list[int] = []
    inserted: Counter[tuple[str, str]] = Counter()
    insert, live = sql("enqueue_keyed"), sql("live_key_id")
    for row, job in zip(rows, jobs, strict=True):
        name, queue, due_at, args, kwargs, created_at = row[:6]
        params = {"name": name, "queue": queue, "due_at": due_at, "args": args,
                  "kwargs": kwargs, "created_at": created_at, "key": job.key,
                  "trace_context": job.trace_context, "meta": job.meta_json,
                  "expires_at": _expires_us(job)}
        if job.debounced:
            job_id, new = _enqueue_debounced(conn, params, job.max_wait)
            if new:
                inserted[(job.queue, "scheduled")] += 1
            ids.append(job_id)
            continue
        found = conn.execute(insert, params).fetchone()
        if found is None:  # the write lock is held: the live job cannot finish meanwhile
            found = conn.execute(live, {"name": name, "key": job.key}).fetchone()
        else:
            inserted[(job.queue, "scheduled")] += 1
        ids.append(int(found[0]))
    count_jobs(conn, inserted)
    return ids


def _insert_with_children(conn: sqlite3.Connection | sqlite3.Cursor,
                          rows: list[tuple[object, ...]], jobs: Sequence[NewJob]) -> list[int]:
    """`insert_jobs` for a batch holding jobs with parents (keyless, as check_new_jobs
    requires), job after job: each child marks its parents and reads their states
    (enqueue_parents.sql), starts as rota.core.workflows.at_enqueue says, and gets one edge
    per parent. An unknown parent raises ValueError, and the caller's transaction (or
    savepoint) takes the whole batch back. Each job is counted in the state it starts in."""
    ids: list[int] = []
    inserted: Counter[tuple[str, str]] = Counter()
    insert, mark, child, edges = (sql("enqueue_keyed"), sql("enqueue_parents"),
                                  sql("enqueue_child"), sql("enqueue_edges"))
    for row, job in zip(rows, jobs, strict=True):
        name, queue, due_at, args, kwargs, created_at = row[:6]
        params: dict[str, object] = {
            "name": name, "queue": queue, "due_at": due_at, "args": args, "kwargs": kwargs,
            "created_at": created_at, "key": job.key, "trace_context": job.trace_context,
            "meta": job.meta_json, "expires_at": _expires_us(job)}
        if not job.parents:
            if job.debounced:
                job_id, new = _enqueue_debounced(conn, params, job.max_wait)
                inserted[(job.queue, "scheduled")] += new
                ids.append(job_id)
                continue
            found = conn.execute(insert, params).fetchone()
            if found is None:  # a unique key's live job (the write lock is held)
                found = conn.execute(sql("live_key_id"),
                                     {"name": name, "key": job.key}).fetchone()
            else:
                inserted[(job.queue, "scheduled")] += 1
            ids.append(int(found[0]))
            continue
        parents = json.dumps(job.parents, separators=(",", ":"))
        states = {job_id: STATES[state] for job_id, state in
                  conn.execute(mark, {"parents": parents}).fetchall()}
        start = at_enqueue(job.parents, states, job.after_outcome)
        cancelled = start.state is JobState.CANCELLED
        params.update(state=start.state.value, parents=parents,
                      after_outcome=job.after_outcome, waiting_for=start.waiting_for,
                      finished_at=created_at if cancelled else None, last_error=start.error)
        (job_id,) = conn.execute(child, params).fetchone()
        conn.execute(edges, {"parents": parents, "child": job_id})
        inserted[(job.queue, start.state.value)] += 1
        ids.append(int(job_id))
    count_jobs(conn, inserted)
    return ids


def _enqueue_debounced(conn: sqlite3.Connection | sqlite3.Cursor, params: dict[str, object],
                       max_wait: timedelta | None) -> tuple[int, bool]:
    """One debounced job, under the caller's write lock: the key's collecting job takes
    its arguments and due time, or a new job is inserted. (id, whether it is new)."""
    found = conn.execute(sql("debounce_holder"), params).fetchone()
    if found is None:
        (job_id,) = conn.execute(sql("enqueue_debounced"), params).fetchone()
        return int(job_id), True
    conn.execute(sql("debounce_update"), {
        "id": found[0], "args": params["args"], "kwargs": params["kwargs"],
        "due_at": params["due_at"],
        "max_wait": None if max_wait is None else max_wait // timedelta(microseconds=1),
    })
    return int(found[0]), False


class SQLiteJobs(SQLiteConnection):
    def store_time(self) -> None:
        return None  # the processes on one file share their host's clock

    def enqueue(self, jobs: Sequence[NewJob], now: datetime) -> list[int]:
        if not jobs:
            return []
        rows = enqueue_rows(jobs, now)
        with self._write("enqueueing") as conn:
            ids = insert_jobs(conn, rows, jobs)
        self._wake_others()
        return ids

    def requeue(self, job_id: int, now: datetime) -> bool:
        rows, _ = self._run("requeue", {"id": job_id, "now": us(now)}, "requeueing a job",
                            write=True)
        self._wake_others([queue for (queue,) in rows])
        return len(rows) == 1

    def requeue_many(self, *, state: JobState, queue: str | None, now: datetime) -> int:
        rows, _ = self._run("requeue_many", {
            "state": check_requeueable(state).value, "queue": queue, "now": us(now),
        }, "requeueing jobs", write=True)
        self._wake_others(list(dict.fromkeys(queue for (queue,) in rows)))
        return len(rows)

    def purge(
        self, states: Sequence[JobState], finished_before: datetime, limit: int
    ) -> int:
        chosen = purgeable_states(states)
        if limit <= 0:
            return 0
        params: dict[str, object] = {"finished_before": us(finished_before)}
        deleted = 0
        # One write transaction of at most `limit` deletions: the write lock is held for
        # one bounded batch, then claims get their turn (the caller paces the batches).
        with self._write("purging finished jobs") as conn:
            for state in chosen:
                params.update(state=state.value, limit=limit - deleted)
                deleted += conn.execute(sql("purge"), params).rowcount
                if deleted >= limit:
                    break
        return deleted

    def enqueue_on(
        self, connection: object, jobs: Sequence[NewJob], now: datetime
    ) -> list[int]:
        """Store `jobs` on the caller's `sqlite3.Connection` to this store's file, inside
        its current transaction: they exist if and only if the caller commits.

        The writes run inside a SAVEPOINT, so a failure leaves the caller's transaction as
        it was. A connection in Python's default (legacy) transaction mode that has no
        transaction open gets one (`BEGIN`, as Python would open before an INSERT), for the
        caller to commit or roll back. A connection in autocommit mode with no transaction
        open has nothing to join: the jobs commit at once. Workers in other processes see
        them when the caller commits (their watcher polls `PRAGMA data_version`).

        Raises:
            TypeError: `connection` is not a `sqlite3.Connection`.
            StoreError: it is open on another file, or its file's schema is not this rota's
                (opening the store migrates it: `rota.App(url)` or `rota migrate` first).
            sqlite3.Error: from the caller's connection, unchanged.
        """
        if not isinstance(connection, sqlite3.Connection):
            raise TypeError(
                f"SQLite store {self._url!r} enqueues on a sqlite3.Connection to its file "
                f"{self._path!r}; got {type(connection).__module__}."
                f"{type(connection).__qualname__}"
            )
        self._refuse_read_only("enqueueing")
        if not jobs:
            return []
        rows = enqueue_rows(jobs, now)
        cursor = connection.cursor()
        cursor.row_factory = None  # whatever the caller's connection uses, tuples here
        try:
            self._check_callers_file(cursor)
            legacy = getattr(sqlite3, "LEGACY_TRANSACTION_CONTROL", -1)
            if (not connection.in_transaction and connection.isolation_level is not None
                    and getattr(connection, "autocommit", legacy) == legacy):
                # What Python itself runs before the first INSERT of a transaction.
                cursor.execute(f"BEGIN {connection.isolation_level}")
            cursor.execute("SAVEPOINT rota_enqueue")
            try:
                ids = insert_jobs(cursor, rows, jobs)
            except BaseException:
                # Undo rota's writes only. Some errors (disk full, I/O) make SQLite roll
                # the whole transaction back itself: then there is no savepoint left, and
                # the original error is the one to raise.
                if connection.in_transaction:
                    with suppress(sqlite3.Error):
                        cursor.execute("ROLLBACK TO rota_enqueue")
                        cursor.execute("RELEASE rota_enqueue")
                raise
            cursor.execute("RELEASE rota_enqueue")
            return ids
        finally:
            cursor.close()

    def _check_callers_file(self, cursor: sqlite3.Cursor) -> None:
        main = next((row[2] for row in cursor.execute("PRAGMA database_list")
                     if row[1] == "main"), "")
        if not main or os.path.realpath(main) != os.path.realpath(self._path):
            raise StoreError(
                f"SQLite store {self._url!r}: the connection given is open on "
                f"{main or 'an in-memory database'!r}, not on the store's file "
                f"{str(Path(self._path).resolve())!r}; connect to the store's file"
            )
        version = int(cursor.execute(sql("schema_version")).fetchone()[0])
        if version != schema_version_known():
            raise StoreError(
                f"SQLite store {self._url!r} has schema version {version}, this rota writes "
                f"version {schema_version_known()}; open the store first (rota.App(url) or "
                "`rota migrate`), which migrates it"
            )

    # -- the writes of schedules and of the worker registry (reads: sql_base) --------

    def register_schedules(self, schedules: Sequence[ScheduleRegistration],
                           now: datetime) -> None:
        if not schedules:
            return
        moment = us(now)
        rows = [
            {"name": s.name, "definition": s.definition, "rule": s.rule,
             "timezone": s.timezone, "job_name": s.job_name, "queue": s.queue,
             "args": s.args_json, "kwargs": s.kwargs_json, "now": moment}
            for s in schedules
        ]
        with self._write("registering schedules") as conn:
            conn.executemany(sql("register_schedule"), rows)

    def fire_schedule(self, name: str, definition: str, job: NewJob,
                      now: datetime) -> FireOutcome:
        params = self._fire_params(name, definition, job, now)
        decode_arguments(job.args_json, job.kwargs_json)  # bad JSON fails before writing
        # The compare-and-set and the insert share one write transaction (BEGIN
        # IMMEDIATE holds the file's write lock): no other process can fire in between.
        fired: int | None = None
        with self._write("firing a schedule") as conn:
            if conn.execute(sql("fire_schedule"), params).rowcount == 1:
                (job_id,) = conn.execute(sql("fire_schedule_enqueue"), params).fetchone()
                count_jobs(conn, {(job.queue, "scheduled"): 1})
                fired = int(job_id)
            else:
                row = conn.execute(sql("schedule_definition"), {"name": name}).fetchone()
        if fired is not None:
            self._wake_others()  # after the commit: other processes' watchers look at once
            return FireOutcome(fired)
        return FireOutcome(None, current=row is not None and row[0] == definition)

    def register_worker(self, worker: WorkerInfo, now: datetime) -> None:
        params = self._worker_params(worker, now)
        group_rows = []
        for group in worker.groups:
            kind, queues, weights = policy_columns(group)
            group_rows.append({"name": group.name, "kind": kind, "queues": queues,
                               "weights": weights, "pool_size": group.pool_size,
                               "now": us(now)})
        with self._write("registering a worker") as conn:
            conn.execute(sql("register_worker"), params)
            conn.executemany(sql("register_worker_group"), group_rows)

    def refresh_worker(
        self,
        worker_id: str,
        now: datetime,
        *,
        dead_at: datetime,
        in_flight: Mapping[str, int],
        served: Sequence[ServedCount],
        new: Sequence[ServedCount] = (),
        clock_offset: timedelta = timedelta(0),
    ) -> bool:
        params = self._refresh_params(worker_id, now, dead_at, in_flight, served, clock_offset)
        minute = us(minute_of(now))
        rows = [{"minute": minute, "grp": c.group, "queue": c.queue, "outcome": c.outcome,
                 "count": c.count} for c in new]
        with self._write("refreshing a worker") as conn:
            if conn.execute(sql("refresh_worker"), params).rowcount != 1:
                return False
            if rows:
                conn.executemany(sql("add_served"), rows)
        return True

    # -- leader leases ----------------------------------------------------------------------

    def take_leadership(self, name: str, owner: str, now: datetime,
                        ttl: timedelta) -> LeaderLease | None:
        """Read first: a follower's try while another worker holds the lease takes no
        write lock (the write transaction would wait for every claim's)."""
        check_leadership(name, owner, ttl)
        at = self._to_db_time(now)
        rows, _ = self._run("leader_lease", {"name": name}, "reading a leader lease")
        if rows and rows[0][0] != owner and rows[0][1] > at:
            return self._leader_lease(rows)
        taken = super().take_leadership(name, owner, now, ttl)
        if taken is not None:
            return taken
        # Another worker took it between the read and the write.
        rows, _ = self._run("leader_lease", {"name": name}, "reading a leader lease")
        return self._leader_lease(rows)
