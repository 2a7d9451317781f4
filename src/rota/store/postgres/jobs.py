"""Writing jobs on PostgreSQL: `enqueue` (and `enqueue_on`, inside the caller's
transaction, sync or async), the requeues, `purge`, and the writes of schedules and of
the worker registry (their reads are shared: rota.store.sql_base). An enqueue of
thousands of jobs is one `INSERT ... SELECT FROM unnest(...)`, ids in input order, with
one NOTIFY per Queue touched; a requeue sends the same hint from its statement.

Imports the core, the store contract, the PostgreSQL modules and psycopg.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Mapping, Sequence
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Final, TypeVar

import psycopg
from psycopg.rows import tuple_row

from rota.core.jobs import JobState, NewJob, check_new_jobs, check_requeueable
from rota.core.retention import purgeable_states
from rota.core.schedules import FireOutcome, ScheduleRegistration
from rota.core.workers import ServedCount, WorkerInfo, minute_of
from rota.core.workflows import Start, at_enqueue
from rota.store.base import StoreError
from rota.store.postgres.connection import PostgresConnection
from rota.store.postgres.retry import retried
from rota.store.postgres.schema import int_array, utc
from rota.store.registry_rows import policy_columns
from rota.store.sql_base import STATES, Row

T = TypeVar("T")
# Statements sans I/O: yield (query, params), are sent each statement's rows ([] for a
# statement without any), return what they computed.
_Gen = Generator[tuple[str, dict[str, object]], list[Row], T]
_Steps = _Gen[list[int]]
_PLAIN: Final = Start(JobState.SCHEDULED, 0)  # a job of a batch of children without parents
_PARENTS: Final = attrgetter("parents")
# How many times an enqueue of children waits for a parent another transaction holds
# before it gives up (lock_parents.sql): each wait is one transaction's commit.
_PARENT_LOCK_ROUNDS: Final = 1000


def _enqueue_statement(params: Mapping[str, object]) -> str:
    """enqueue_meta.sql for a batch with meta, enqueue_traced.sql for one with trace
    contexts (enqueued inside a span), else enqueue.sql."""
    if "metas" in params:
        return "enqueue_meta"
    return "enqueue_traced" if "trace_contexts" in params else "enqueue"


_EXPIRES_AT: Final = attrgetter("expires_at")


def _expires_ats(jobs: Sequence[NewJob]) -> list[datetime | None]:
    """Each job's expires_at (None: never expires), checked as every stored time is."""
    return [None if job.expires_at is None else utc(job.expires_at, "expires_at")
            for job in jobs]


def _columns(jobs: Sequence[NewJob]) -> dict[str, object]:
    """The jobs as the enqueue statements' parallel arrays."""
    return {
        "names": [job.name for job in jobs],
        "queues": [job.queue for job in jobs],
        "due_ats": [job.due_at for job in jobs],
        "args": [job.args_json for job in jobs],
        "kwargs": [job.kwargs_json for job in jobs],
    }


def _key_columns(jobs: Sequence[NewJob]) -> dict[str, object]:
    """The keyed statements' two arrays more (their trace contexts always travel)."""
    return {"keys": [job.key for job in jobs],
            "trace_contexts": [job.trace_context for job in jobs],
            "metas": [job.meta_json for job in jobs]}


class PostgresJobs(PostgresConnection):
    def store_time(self) -> datetime:
        # Reads no table: a store opened read-only answers it before any schema exists.
        # Not retried: a read of the clock takes no lock, so it never deadlocks.
        with self._cursor("read the server's clock", schema=False) as cursor:
            cursor.execute(self._query("store_time"))
            row = cursor.fetchone()
        assert row is not None
        return self._from_db_time(row[0])

    def enqueue(self, jobs: Sequence[NewJob], now: datetime) -> list[int]:
        if not jobs:
            return []
        params = self._enqueue_params(jobs, now)
        if all(job.key is None for job in jobs) and not any(map(_PARENTS, jobs)):
            rows, _ = self._run(_enqueue_statement(params), params)
            return [row[0] for row in rows]
        # Unique jobs, workflows: a few statements, so one transaction on the pooled
        # connection.
        def transaction() -> list[int]:
            with self._cursor("enqueue") as cursor, cursor.connection.transaction():
                return self._drive(cursor, self._enqueue_steps(jobs, params))

        return retried(transaction)

    def _enqueue_params(self, jobs: Sequence[NewJob], now: datetime) -> dict[str, object]:
        """enqueue.sql's parameters, after the checks every store makes."""
        check_new_jobs(jobs)  # the same jobs refused on every store
        # Arguments are JSON text from encode_arguments; the statement's ::json cast checks
        # them again, atomically (decoding them here too cost ~40% of enqueue time).
        # Array parameters are sent in binary (%(name)b): 10x cheaper to encode than text.
        for job in jobs:
            utc(job.due_at, "due_at")
        params: dict[str, object] = {
            "now": utc(now), **_columns(jobs), "channel": self.channel,
        }
        if any(job.trace_context is not None for job in jobs) or any(
                map(_EXPIRES_AT, jobs)):  # enqueued inside a span, or with an expiry
            params["trace_contexts"] = [job.trace_context for job in jobs]
            params["expires_ats"] = _expires_ats(jobs)
        if any(job.meta_json is not None for job in jobs):  # enqueue_meta.sql
            params["trace_contexts"] = [job.trace_context for job in jobs]
            params["expires_ats"] = _expires_ats(jobs)
            params["metas"] = [job.meta_json for job in jobs]
        return params

    @staticmethod
    def _drive(cursor: psycopg.Cursor[Row], steps: _Gen[T]) -> T:
        """Run the statements of `steps` on `cursor` (inside a transaction), one after
        another; what `steps` returns."""
        query, query_params = next(steps)
        while True:
            cursor.execute(query, query_params)
            rows = cursor.fetchall() if cursor.description is not None else []
            try:
                query, query_params = steps.send(rows)
            except StopIteration as done:
                result: T = done.value
                return result

    @staticmethod
    async def _drive_async(cursor: psycopg.AsyncCursor[Row], steps: _Gen[T]) -> T:
        query, query_params = next(steps)
        while True:
            await cursor.execute(query, query_params)
            rows = await cursor.fetchall() if cursor.description is not None else []
            try:
                query, query_params = steps.send(rows)
            except StopIteration as done:
                result: T = done.value
                return result

    def _enqueue_steps(self, jobs: Sequence[NewJob], params: dict[str, object]) -> _Steps:
        """The statements of an enqueue that has keys or parents (`_keyed_steps`,
        `_children_steps`): returns the ids in input order. A job with parents has no key
        (check_new_jobs), so a batch of both splits into the keyed jobs and the rest."""
        if not any(map(_PARENTS, jobs)):
            return (yield from self._keyed_steps(jobs, params))
        keyed = [index for index, job in enumerate(jobs) if job.key is not None]
        if not keyed:
            return (yield from self._children_steps(jobs, params))
        taken = set(keyed)
        rest = [index for index in range(len(jobs)) if index not in taken]
        ids = [0] * len(jobs)
        rest_ids = yield from self._children_steps([jobs[i] for i in rest], params)
        keyed_ids = yield from self._keyed_steps([jobs[i] for i in keyed], params)
        for index, job_id in (*zip(rest, rest_ids, strict=True),
                              *zip(keyed, keyed_ids, strict=True)):
            ids[index] = job_id
        return ids

    def _children_steps(self, jobs: Sequence[NewJob], params: dict[str, object]) -> _Steps:
        """Enqueue a batch without keys, of which some jobs have parents: lock the parents
        and read their states (`_lock_parents`), start each child as
        rota.core.workflows.at_enqueue says (ValueError for a parent that does not exist:
        nothing was written yet, and the caller's transaction rolls back what it has),
        then enqueue_children.sql."""
        wanted = list(dict.fromkeys(parent for job in jobs for parent in job.parents))
        states = yield from self._lock_parents(wanted)
        starts = [at_enqueue(job.parents, states, job.after_outcome) if job.parents
                  else _PLAIN for job in jobs]
        parent_ids: list[int] = []
        parent_starts: list[int] = []
        for job in jobs:
            parent_starts.append(len(parent_ids) + 1)  # PostgreSQL arrays count from 1
            parent_ids.extend(job.parents)
        rows = yield self._query("enqueue_children"), {
            "now": params["now"], "channel": params["channel"], **_columns(jobs),
            "expires_ats": _expires_ats(jobs),
            "trace_contexts": [job.trace_context for job in jobs],
            "metas": [job.meta_json for job in jobs],
            "states": [start.state.value for start in starts],
            "errors": [start.error for start in starts],
            "parent_ids": int_array(parent_ids),
            "parent_starts": int_array(parent_starts),
            "parent_counts": int_array([len(job.parents) for job in jobs]),
            "after_outcomes": [job.after_outcome for job in jobs],
            "waiting_fors": int_array([start.waiting_for for start in starts]),
            "unfinished": int_array([parent for parent in wanted
                                     if not states[parent].finished]),
        }
        return [row[0] for row in rows]

    def _lock_parents(self, ids: Sequence[int]) -> _Gen[dict[int, JobState]]:
        """Lock the jobs `ids` (lock_parents.sql) and return the state of each that
        exists. One held by another transaction is waited for alone, holding none of the
        others (the savepoint's rollback lets them go), then all are tried again: so this
        never waits while holding a parent, and never deadlocks with a batch of outcomes
        that holds some of them."""
        literal = int_array(ids)
        yield "SAVEPOINT rota_parents", {}
        for _round in range(_PARENT_LOCK_ROUNDS):
            rows = yield self._query("lock_parents"), {"ids": literal}
            held = [job_id for job_id, state in rows if state is None]
            if not held:
                yield "RELEASE SAVEPOINT rota_parents", {}
                return {job_id: STATES[state] for job_id, state in rows}
            yield "ROLLBACK TO SAVEPOINT rota_parents", {}
            yield self._query("wait_for_job"), {"id": held[0]}
            yield "ROLLBACK TO SAVEPOINT rota_parents", {}
        raise StoreError(
            f"PostgreSQL store {self._url!r}: the parents of the jobs enqueued stayed held "
            f"by other transactions ({_PARENT_LOCK_ROUNDS} rounds); retry the enqueue"
        )

    def _keyed_steps(self, jobs: Sequence[NewJob], params: dict[str, object]) -> _Steps:
        """The statements that enqueue a batch with keys, sans I/O: yields (query, params),
        is sent each statement's rows, returns the ids in input order (a job not inserted
        because a live job holds its name and key gets that job's id). The sync and the
        async enqueue on a caller's connection both drive it.

        Under READ COMMITTED each statement sees what committed before it started. The
        INSERT waits for a concurrent enqueuer of the same key and then skips its job;
        live_keys.sql, a later statement, sees that job. If the live job finished in
        between (the key is free again), the job is inserted in another round."""
        ids: list[int | None] = [None] * len(jobs)
        pending = [index for index, job in enumerate(jobs) if not job.debounced]
        if len(pending) < len(jobs):
            debounced = yield from self._debounced_steps(jobs, params)
            for index, job_id in debounced.items():
                ids[index] = job_id
            if not pending:
                return [job_id for job_id in ids if job_id is not None]
        for _round in range(10):
            batch = [jobs[index] for index in pending]
            inserted = yield self._query("enqueue_keyed"), {
                **params, **_columns(batch), **_key_columns(batch),
                "expires_ats": _expires_ats(batch),
            }  # rows (id, name, key), in input order
            keyless = iter([row[0] for row in inserted if row[2] is None])
            by_key = {(row[1], row[2]): row[0] for row in inserted if row[2] is not None}
            missing: dict[tuple[str, str], list[int]] = {}
            for index in pending:
                job = jobs[index]
                if job.key is None:
                    ids[index] = next(keyless)
                elif (job.name, job.key) in by_key:
                    ids[index] = by_key[(job.name, job.key)]
                else:
                    missing.setdefault((job.name, job.key), []).append(index)
            if missing:
                holders = yield self._query("live_keys"), {
                    "names": [name for name, _ in missing],
                    "keys": [key for _, key in missing],
                }
                for name, key, job_id in holders:
                    for index in missing.pop((name, key), []):
                        ids[index] = job_id
            pending = sorted(index for indexes in missing.values() for index in indexes)
            if not pending:
                return [job_id for job_id in ids if job_id is not None]
        raise StoreError(
            f"PostgreSQL store {self._url!r}: unique jobs kept finishing while being "
            "enqueued (10 rounds); retry the enqueue"
        )

    def _debounced_steps(self, jobs: Sequence[NewJob], params: dict[str, object]
                         ) -> Generator[tuple[str, dict[str, object]], list[Row],
                                        dict[int, int]]:
        """enqueue_debounced.sql for the debounced jobs of `jobs`: returns their ids by
        index. Entries of one name and key share one job, the last entry's arguments:
        one statement may not write a row twice, and the last enqueue wins."""
        last: dict[tuple[str, str | None], int] = {}
        for index, job in enumerate(jobs):
            if job.debounced:
                last[(job.name, job.key)] = index
        batch = [jobs[index] for index in last.values()]
        written = yield self._query("enqueue_debounced"), {
            "now": params["now"], "channel": params["channel"],
            **_columns(batch), **_key_columns(batch),
            "max_waits": [job.max_wait for job in batch],
            "expires_ats": _expires_ats(batch),
        }  # rows (id, name, key)
        by_key = {(name, key): job_id for job_id, name, key in written}
        return {index: by_key[(job.name, job.key)]
                for index, job in enumerate(jobs) if job.debounced}

    def enqueue_on(
        self, connection: object, jobs: Sequence[NewJob], now: datetime
    ) -> list[int]:
        """Store `jobs` on the caller's `psycopg.Connection` (psycopg 3), inside its current
        transaction: they exist if and only if the caller commits. The wake-up NOTIFY is
        part of that transaction, so PostgreSQL delivers it to the workers at commit, and
        not at all on rollback. An autocommit connection has no transaction to join: the
        jobs commit at once, like any statement run on it.

        The connection must reach the store's database; the store's schema is migrated
        first if needed (on the store's own connection).

        Raises:
            TypeError: `connection` is not a `psycopg.Connection` (for an
                `AsyncConnection`, see `enqueue_on_async`).
            psycopg.Error: from the caller's connection, unchanged (the caller's
                transaction is then aborted, as after any failed statement: roll it back).
        """
        if not isinstance(connection, psycopg.Connection):
            raise TypeError(
                f"PostgreSQL store {self._url!r} enqueues on a psycopg.Connection (psycopg "
                f"3, sync); got {type(connection).__module__}.{type(connection).__qualname__}"
            )
        if not jobs:
            return []
        params = self._enqueue_params(jobs, now)
        self._refuse_closed()
        self._ensure_ready()  # migrated: the statement needs the schema
        with connection.cursor(row_factory=tuple_row) as cursor:
            if all(job.key is None for job in jobs) and not any(map(_PARENTS, jobs)):
                cursor.execute(self._query(_enqueue_statement(params)), params)
                return [row[0] for row in cursor.fetchall()]
            if connection.autocommit:  # no transaction of the caller's: make one
                with connection.transaction():
                    return self._drive(cursor, self._enqueue_steps(jobs, params))
            return self._drive(cursor, self._enqueue_steps(jobs, params))

    async def enqueue_on_async(
        self, connection: object, jobs: Sequence[NewJob], now: datetime
    ) -> list[int]:
        """`enqueue_on` for async code: on a `psycopg.AsyncConnection` the statements are
        awaited on the caller's event loop; a sync `psycopg.Connection` is written on
        inline, as `enqueue_on` does. The same rules otherwise.

        Raises:
            TypeError: `connection` is neither.
            psycopg.Error: from the caller's connection, unchanged.
        """
        if not isinstance(connection, psycopg.AsyncConnection):
            return self.enqueue_on(connection, jobs, now)
        if not jobs:
            return []
        params = self._enqueue_params(jobs, now)
        self._refuse_closed()
        if not self._ready:
            await asyncio.to_thread(self._ensure_ready)  # migrating blocks: off the loop
        async with connection.cursor(row_factory=tuple_row) as cursor:
            if all(job.key is None for job in jobs) and not any(map(_PARENTS, jobs)):
                await cursor.execute(self._query(_enqueue_statement(params)), params)
                return [row[0] for row in await cursor.fetchall()]
            if connection.autocommit:  # no transaction of the caller's: make one
                async with connection.transaction():
                    return await self._drive_async(cursor, self._enqueue_steps(jobs, params))
            return await self._drive_async(cursor, self._enqueue_steps(jobs, params))

    def requeue(self, job_id: int, now: datetime) -> bool:
        try:
            _, count = self._run("requeue", {
                "id": job_id, "now": utc(now), "channel": self.channel})
        except StoreError as error:
            # Unique jobs: a job of the same name and key was enqueued (committed) while
            # this statement ran; its NOT EXISTS saw the snapshot before. Refused, as if
            # that job had been there first.
            if isinstance(error.__cause__, psycopg.errors.UniqueViolation):
                return False
            raise
        return count == 1

    def requeue_many(self, *, state: JobState, queue: str | None, now: datetime) -> int:
        rows, _ = self._run("requeue_many", {
            "state": check_requeueable(state).value, "queue": queue, "now": utc(now),
            "channel": self.channel,
        })
        return int(rows[0][0])

    def purge(
        self, states: Sequence[JobState], finished_before: datetime, limit: int
    ) -> int:
        chosen = purgeable_states(states)
        if limit <= 0:
            return 0
        params: dict[str, object] = {
            "states": [state.value for state in chosen],
            "finished_before": utc(finished_before, "finished_before"),
        }
        # Two statements: the second's snapshot is taken after the first locked the rows
        # (purge.sql says why); the first goes by index (index_scans_only.sql says why).
        def transaction() -> int:
            with self._cursor("purge") as cursor, cursor.connection.transaction():
                cursor.execute(self._query("index_scans_only"))
                cursor.execute(self._query("purge_lock"), {**params, "limit": limit})
                ids = [row[0] for row in cursor.fetchall()]
                if not ids:
                    return 0
                cursor.execute(self._query("purge"), {**params, "ids": int_array(ids)})
                row = cursor.fetchone()
                assert row is not None
                return int(row[0])

        return retried(transaction)

    # -- the writes of schedules and of the worker registry (reads: sql_base) --------

    def register_schedules(self, schedules: Sequence[ScheduleRegistration],
                           now: datetime) -> None:
        if not schedules:
            return
        self._run("register_schedules", {
            "now": utc(now),
            "names": [s.name for s in schedules],
            "definitions": [s.definition for s in schedules],
            "rules": [s.rule for s in schedules],
            "timezones": [s.timezone for s in schedules],
            "job_names": [s.job_name for s in schedules],
            "queues": [s.queue for s in schedules],
            "args": [s.args_json for s in schedules],
            "kwargs": [s.kwargs_json for s in schedules],
        })

    def fire_schedule(self, name: str, definition: str, job: NewJob,
                      now: datetime) -> FireOutcome:
        rows, _ = self._run("fire_schedule", {
            **self._fire_params(name, definition, job, now), "channel": self.channel})
        job_id, stored, _hints = rows[0]
        return FireOutcome(job_id, current=job_id is not None or stored == definition)

    def register_worker(self, worker: WorkerInfo, now: datetime) -> None:
        columns = [policy_columns(group) for group in worker.groups]
        self._run("register_worker", {
            **self._worker_params(worker, now),
            "names": [group.name for group in worker.groups],
            "kinds": [kind for kind, _, _ in columns],
            "queue_lists": [queues for _, queues, _ in columns],
            "weight_lists": [weights for _, _, weights in columns],
            "pool_sizes": [group.pool_size for group in worker.groups],
        })

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
        # One INSERT may not touch a row twice: sum duplicates first.
        summed: dict[tuple[str, str, str], int] = {}
        for count in new:
            key = (count.group, count.queue, count.outcome)
            summed[key] = summed.get(key, 0) + count.count
        rows, _ = self._run("refresh_worker", {
            **self._refresh_params(worker_id, now, dead_at, in_flight, served, clock_offset),
            "minute": minute_of(utc(now)),
            "grps": [key[0] for key in summed], "queues": [key[1] for key in summed],
            "outcomes": [key[2] for key in summed], "counts": list(summed.values()),
        })
        return bool(rows)
