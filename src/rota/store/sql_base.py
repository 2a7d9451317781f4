"""What the SQLite and PostgreSQL stores share: their SQL files, the migration runner, and
the contract methods that only run one named statement and map its rows.

A dialect subclasses `SqlStore` and supplies its hooks (declared there): how a statement
runs (connection, transaction, errors), how a time is stored, which statements end a
lease, how other processes hear of claimable jobs, the migration steps. What differs in
substance stays in the dialect: enqueueing, claims and the batched outcomes (complete,
release, heartbeat), requeues, purges, the registry's and the schedules' writes,
wake-ups, connections.

Imports the core and the store contract, never an adapter.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache, partial
from importlib.resources import files
from types import MappingProxyType
from typing import Any, ClassVar, Final, Generic, TypeVar, assert_never

from rota.core.families import family_prefix, is_family, validate_entry
from rota.core.group_policies import (
    StoredPolicy,
    checked_policy,
    policy_columns,
    stored_policy,
)
from rota.core.groups import validate_group_name
from rota.core.jobs import (
    CANCELLED_BEFORE_RUN,
    CANCELLED_ON_REQUEST,
    JobEvent,
    JobRecord,
    JobState,
    JsonValue,
    Lease,
    NewJob,
    check_new_jobs,
    decode_arguments,
    decode_result,
    decode_stored_arguments,
)
from rota.core.meta import decode_meta, meta_filter, meta_needle
from rota.core.outcomes import bound_traceback, ending
from rota.core.policy import DispatchPolicy
from rota.core.progress import (
    AttemptError,
    Progress,
    attempt_error_json,
    errors_from_json,
    progress_from_json,
    progress_json,
    worker_of_owner,
)
from rota.core.queue_controls import (
    QueueInfo,
    QueueSettings,
    build_queue_infos,
    validate_queue_limit,
)
from rota.core.rates import Bucket, QueueRate, RatedQueue, check_rate, stored_rate
from rota.core.schedules import ScheduleRegistration, ScheduleRow, code_schedule_clash
from rota.core.workers import ServedCount, WorkerGroupInfo, WorkerInfo, minute_of
from rota.store.base import (
    LeaderLease,
    LeaseOutcome,
    SchemaTooNew,
    check_leadership,
    listing_statement,
)
from rota.store.registry_rows import (
    group_from_columns,
    groups_from_json,
    groups_json,
    in_flight_json,
    served_from_json,
    served_json,
)
from rota.store.sql_template import fill, split_parts

Row = tuple[Any, ...]
STATES: Final = {state.value: state for state in JobState}
Conn = TypeVar("Conn")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str  # the file's name without ".sql"
    description: str
    statements: tuple[str, ...]


def by_id_both_ways(name: str, *, later: Collection[str] = ()
                    ) -> dict[str, Callable[[SqlFiles], str]]:
    """`name` and `name_newest` composed from the one file `name.sql`: its `{beyond}`
    (the keyset test against the id a page ends at) and `{order}` filled for ascending
    ids (`id > beyond`, ASC) and for newest first (`id < beyond`, DESC)."""
    def compose(files: SqlFiles, beyond: str, order: str, composed: str) -> str:
        return fill(files.text(name), {"beyond": beyond, "order": order}, later=later,
                    what=f"rota's {composed} from {name}.sql")

    return {name: partial(compose, beyond=">", order="ASC", composed=name),
            f"{name}_newest": partial(compose, beyond="<", order="DESC",
                                      composed=f"{name}_newest")}


class SqlFiles:
    """The SQL files of one dialect, `sql/<dialect>/<name>.sql` beside this module, read
    through importlib.resources (so they load from a wheel or a zip too), each read once.
    A migration's file name matches `migration_file`: group 1 is its version, group 2 its
    description; `split` cuts its script into the statements the dialect runs.

    `statement(name)` is the statement as the dialect runs it: the file's text, or, for a
    name in `composed`, what that function builds from templates and parts
    (rota.store.sql_template), checked as it loads. `later`: the placeholders a plain
    file may keep, filled when it runs (PostgreSQL's schema)."""

    def __init__(self, dialect: str, migration_file: str,
                 split: Callable[[str], Sequence[str]], *,
                 composed: Mapping[str, Callable[[SqlFiles], str]] | None = None,
                 later: Collection[str] = ()) -> None:
        self._dialect = dialect
        self._folder = files("rota.store").joinpath("sql", dialect)
        self._migration_file = re.compile(migration_file)
        self._split = split
        self._migrations: tuple[Migration, ...] | None = None
        self._composed = dict(composed or {})
        self._later = frozenset(later)
        # Caches in C: the hot paths look their statement up on every call.
        self.text: Callable[[str], str] = cache(
            lambda name: self._folder.joinpath(f"{name}.sql").read_text(encoding="utf-8"))
        self.statement: Callable[[str], str] = cache(self._load)
        self.parts: Callable[[str], Mapping[str, str]] = cache(
            lambda name: MappingProxyType(split_parts(
                self.text(name), f"rota's {dialect} {name}.sql")))

    def _load(self, name: str) -> str:
        compose = self._composed.get(name)
        if compose is not None:
            return compose(self)
        # A plain file: every placeholder in it must be one filled when it runs.
        return fill(self.text(name), {}, later=self._later,
                    what=f"rota's {self._dialect} statement {name}")

    def names(self) -> list[str]:
        """Every statement's name: the files that are not migrations, and the composed."""
        found = {entry.name.removesuffix(".sql") for entry in self._folder.iterdir()
                 if entry.name.endswith(".sql")
                 and self._migration_file.fullmatch(entry.name) is None}
        return sorted(found | set(self._composed))

    def migrations(self) -> tuple[Migration, ...]:
        """Every migration, in version order; versions run 1, 2, 3, ... with no gap."""
        if self._migrations is None:
            found: list[Migration] = []
            for entry in self._folder.iterdir():
                match = self._migration_file.fullmatch(entry.name)
                if match is not None:
                    script = entry.read_text(encoding="utf-8")
                    found.append(Migration(int(match[1]), entry.name.removesuffix(".sql"),
                                           match[2].replace("_", " "),
                                           tuple(self._split(script))))
            found.sort(key=lambda migration: migration.version)
            versions = [migration.version for migration in found]
            if versions != list(range(1, len(found) + 1)):  # a packaging mistake
                raise RuntimeError(f"rota's {self._dialect} migrations must be numbered "
                                   f"1, 2, 3, ...; found {versions}")
            self._migrations = tuple(found)
        return self._migrations

    def known_version(self) -> int:
        """The newest schema version this rota knows."""
        return len(self.migrations())


def fence(lease: Lease) -> dict[str, object]:
    """The parameters every statement fenced by a lease takes."""
    return {"id": lease.job_id, "owner": lease.owner, "attempt": lease.attempt}


def failed_attempt(lease: Lease, now: datetime, error: str, traceback: str | None) -> str:
    """The `attempt_error` parameter of the statements that record a failed attempt: its
    `AttemptError` as JSON, which they append to the job's `errors` (the last 20)."""
    return attempt_error_json(AttemptError(lease.attempt, now, error, traceback,
                                           worker_of_owner(lease.owner)))


_ENDING: Final = {JobState.DEAD_LETTERED: "dead-lettering a job",
                  JobState.QUARANTINED: "quarantining a job",
                  JobState.CANCELLED: "cancelling a leased job"}
# The state each ending event that finishes the job leaves it in (rota.core.outcomes).
_ENDED_BY: Final = {JobEvent.DEAD_LETTER: JobState.DEAD_LETTERED,
                    JobEvent.QUARANTINE: JobState.QUARANTINED,
                    JobEvent.CANCEL: JobState.CANCELLED}


class SqlStore(ABC, Generic[Conn]):
    """The part of the `Store` contract that is the same on every SQL dialect, over the
    hooks below that each dialect supplies. `Conn` is the dialect's connection type."""

    _url: str
    _schema_label: str  # the database and schema, as messages name them
    _files: ClassVar[SqlFiles]
    # The statement that ends a lease in each end state, and the two that end an expired
    # one: (retrying it, dead-lettering it).
    _END_LEASE: ClassVar[Mapping[JobState, str]]
    _EXPIRE_LEASE: ClassVar[tuple[str, str]]
    # Parameters of the statements that make jobs claimable again, for their NOTIFY.
    _hints: Mapping[str, object] = MappingProxyType({})

    # -- hooks --------------------------------------------------------------------------

    @abstractmethod
    def _run(self, name: str, params: Mapping[str, object], doing: str, *,
             write: bool = False) -> tuple[list[Row], int]:
        """Run the named statement; its rows (if any) and its row count. `doing` names the
        call in SQLite's messages (PostgreSQL's name the statement); a `write` runs in
        SQLite's write transaction."""

    @abstractmethod
    def _to_db_time(self, moment: datetime, what: str = "now") -> object:
        """`moment` as the database stores it. Raises ValueError for a naive datetime."""

    @abstractmethod
    def _from_db_time(self, value: Any, /) -> datetime:
        """A stored time as a timezone-aware datetime."""

    def _wake_others(self, queues: Sequence[str] | None = None) -> None:
        """After a commit that made jobs of `queues` claimable again: tell the workers of
        other processes, when the statement did not do so itself. Never raises."""

    def _tell_finished(self) -> None:
        """After a commit that may have moved jobs into a finished state: wake the finish
        listeners (`FinishSource`), when the statement did not do so itself. Never
        raises."""

    @abstractmethod
    def _schema_version_on(self, conn: Conn) -> int:
        """The schema version of the database `conn` reaches (0: no schema yet)."""

    @abstractmethod
    def _migration_lock(self, conn: Conn) -> AbstractContextManager[None]:
        """One transaction holding the lock that serialises migrators."""

    @abstractmethod
    def _apply_migration(self, conn: Conn, migration: Migration) -> None:
        """Apply `migration` inside `_migration_lock`, recording its version."""

    # -- migrations ---------------------------------------------------------------------

    def _migrate_on(self, conn: Conn) -> list[int]:
        """Bring the schema up to date; the versions applied. Safe when many processes
        start on a fresh database at once: the version is read again under the lock, so
        each migration runs exactly once, and an up-to-date schema takes no lock."""
        migrations = self._files.migrations()
        if self._checked_version(conn) == len(migrations):
            return []
        applied: list[int] = []
        with self._migration_lock(conn):
            for migration in migrations[self._checked_version(conn):]:
                self._apply_migration(conn, migration)
                applied.append(migration.version)
        return applied

    def known_schema_version(self) -> int:
        """The version this rota's migrations reach (`Migratable`)."""
        return self._files.known_version()

    def _checked_version(self, conn: Conn) -> int:
        """The schema version; SchemaTooNew if a newer rota migrated the database."""
        version, known = self._schema_version_on(conn), self._files.known_version()
        if version > known:
            raise SchemaTooNew(
                f"{self._schema_label} has schema version {version}, but this rota knows "
                f"versions up to {known}: a newer rota migrated it. Upgrade rota to use it"
            )
        return version

    # -- the contract -------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._url

    def _record(self, row: Row) -> JobRecord:
        """The record of a row in get_job.sql's columns (as every listing gives them);
        undecodable arguments set `arguments_error` (rota.store.corrupt)."""
        (job_id, name, queue, state, attempt, due_at, args_json, kwargs_json, last_error,
         created_at, lease_owner, lease_expires_at, started_at, result, cancel_requested,
         finished_at, key, last_traceback, parents, meta, snoozes, expires_at, progress,
         errors, worker, after_outcome) = row
        at = self._from_db_time
        args, kwargs, arguments_error = decode_stored_arguments(args_json, kwargs_json)
        return JobRecord(
            id=job_id, name=name, queue=queue, state=STATES[state], attempt=attempt,
            due_at=at(due_at), args=args, kwargs=kwargs, last_error=last_error,
            created_at=at(created_at), lease_owner=lease_owner,
            lease_expires_at=None if lease_expires_at is None else at(lease_expires_at),
            started_at=None if started_at is None else at(started_at),
            result=decode_result(result), cancel_requested=bool(cancel_requested),
            arguments_error=arguments_error,
            finished_at=None if finished_at is None else at(finished_at), key=key,
            last_traceback=last_traceback, parents=self._from_db_parents(parents),
            meta=decode_meta(meta), snoozes=snoozes,
            expires_at=None if expires_at is None else at(expires_at),
            progress=progress_from_json(progress), errors=errors_from_json(errors),
            worker=worker, after_outcome=after_outcome,
        )

    @abstractmethod
    def _from_db_parents(self, value: Any, /) -> tuple[int, ...]:
        """A row's `parents` column as the tuple of parent ids (NULL: ())."""

    def get_job(self, job_id: int) -> JobRecord | None:
        rows, _ = self._run("get_job", {"id": job_id}, "reading a job")
        return self._record(rows[0]) if rows else None

    def job_children(self, job_id: int) -> list[int]:
        rows, _ = self._run("job_children", {"id": job_id}, "reading a job's children")
        return [row[0] for row in rows]

    def list_jobs(
        self,
        *,
        queue: str | None = None,
        state: JobState | None = None,
        limit: int = 100,
        newest: bool = False,
        offset: int = 0,
        name: str | None = None,
    ) -> list[JobRecord]:
        if limit <= 0:
            return []
        rows, _ = self._run(listing_statement(newest, state), {
            "queue": queue, "state": None if state is None else state.value,
            "limit": limit, "offset": offset, "name": name,
        }, "listing jobs")
        return [self._record(row) for row in rows]

    def find_jobs(
        self,
        *,
        queue: str | None = None,
        state: JobState | None = None,
        name: str | None = None,
        meta: Mapping[str, JsonValue] | None = None,
        limit: int = 100,
        newest: bool = True,
        beyond: int | None = None,
    ) -> list[JobRecord]:
        if limit <= 0:
            return []
        wanted = meta_filter(meta)
        rows, _ = self._run("find_jobs_newest" if newest else "find_jobs", {
            "queue": queue, "state": None if state is None else state.value, "name": name,
            "meta": None if wanted is None else json.dumps(wanted, separators=(",", ":")),
            "needle": None if wanted is None else meta_needle(wanted),
            "limit": limit, "beyond": beyond,
        }, "finding jobs")
        return [self._record(row) for row in rows]

    def find_expired_leases(self, now: datetime, limit: int) -> list[JobRecord]:
        if limit <= 0:
            return []
        rows, _ = self._run("find_expired_leases", {
            "now": self._to_db_time(now), "limit": limit}, "finding expired leases")
        return [self._record(row) for row in rows]

    def jobs_in_flight(self, owners: Sequence[str], limit: int = 1000) -> list[JobRecord]:
        if limit <= 0 or not owners:
            return []
        rows, _ = self._run("jobs_in_flight", {
            "owners": self._text_list(owners), "limit": limit}, "reading the jobs in flight")
        return [self._record(row) for row in rows]

    @abstractmethod
    def _text_list(self, texts: Sequence[str], /) -> object:
        """`texts` as one parameter the dialect's statements read as a list of text."""

    def count_jobs(self) -> dict[tuple[str, JobState], int]:
        rows, _ = self._run("count_jobs", {}, "counting jobs")
        return {(queue, STATES[state]): count for queue, state, count in rows}

    def due_queues(self, prefixes: Sequence[str], now: datetime, *, after: str = "",
                   limit: int = 1000) -> list[str]:
        if limit <= 0 or not prefixes:
            return []
        rows, _ = self._run("due_queues", {
            "prefixes": self._text_list(prefixes), "now": self._to_db_time(now),
            "after": after, "limit": limit}, "finding the Queue family members with work")
        return [queue for (queue,) in rows]

    def due_position(self, job_id: int, now: datetime) -> int | None:
        rows, _ = self._run("due_position", {"id": job_id, "now": self._to_db_time(now)},
                            "finding a job's place among the due jobs")
        return int(rows[0][0]) if rows else None

    # -- outcomes of one job ------------------------------------------------------------

    def _retry_params(self, lease: Lease, now: datetime, due_at: datetime, error: str,
                      traceback: str | None) -> dict[str, object]:
        traceback = None if traceback is None else bound_traceback(traceback)
        return {**fence(lease), "now": self._to_db_time(now),
                "due_at": self._to_db_time(due_at, "due_at"), "error": error,
                "cancelled_error": CANCELLED_ON_REQUEST, "traceback": traceback,
                "attempt_error": failed_attempt(lease, now, error, traceback),
                **self._hints}

    def _end_lease_params(self, lease: Lease, now: datetime, state: JobState, error: str,
                          traceback: str | None = None) -> dict[str, object]:
        traceback = None if traceback is None else bound_traceback(traceback)
        return {**fence(lease), "state": state.value, "now": self._to_db_time(now),
                "error": error, "traceback": traceback,
                # a cancel is no failure: nothing appended to `errors`
                "attempt_error": None if state is JobState.CANCELLED else
                failed_attempt(lease, now, error, traceback)}

    def _single_outcomes(self, outcomes: Sequence[LeaseOutcome], now: datetime
                         ) -> Iterator[tuple[str, dict[str, object]]]:
        """The statement and parameters of each outcome but the successes (which the
        dialects batch), as `retry`, `dead_letter`, `quarantine`, `cancel_leased` run them."""
        for lease, outcome in outcomes:
            event, error, traceback, due_at, _result = ending(outcome)
            match event:
                case JobEvent.COMPLETE:
                    continue
                case JobEvent.RETRY:
                    assert error is not None and due_at is not None
                    yield "retry", self._retry_params(lease, now, due_at, error, traceback)
                case JobEvent.SNOOZE:
                    assert due_at is not None
                    yield "snooze", self._snooze_params(lease, now, due_at)
                case JobEvent.DEAD_LETTER | JobEvent.QUARANTINE | JobEvent.CANCEL:
                    assert error is not None
                    state = _ENDED_BY[event]
                    yield self._END_LEASE[state], self._end_lease_params(
                        lease, now, state, error, traceback)
                case JobEvent.EXPIRE:  # refused by check_outcomes: no lease to end
                    raise TypeError("an Expired outcome is a claim's report, not a write")
                case _:
                    assert_never(event)

    def retry(self, lease: Lease, now: datetime, due_at: datetime, error: str,
              *, traceback: str | None = None) -> bool:
        applied = self._run("retry", self._retry_params(lease, now, due_at, error, traceback),
                            "retrying a job", write=True)[1] == 1
        if applied:  # (it may have ended cancelled)
            self._tell_finished()
        return applied

    def _snooze_params(self, lease: Lease, now: datetime, due_at: datetime
                       ) -> dict[str, object]:
        return {**fence(lease), "now": self._to_db_time(now),
                "due_at": self._to_db_time(due_at, "due_at"),
                "cancelled_error": CANCELLED_ON_REQUEST, **self._hints}

    def snooze(self, lease: Lease, now: datetime, due_at: datetime) -> bool:
        applied = self._run("snooze", self._snooze_params(lease, now, due_at),
                            "snoozing a job", write=True)[1] == 1
        if applied:  # (it may have ended cancelled)
            self._tell_finished()
        return applied

    def _end_lease(self, lease: Lease, now: datetime, state: JobState, error: str,
                   traceback: str | None = None) -> bool:
        applied = self._run(self._END_LEASE[state],
                            self._end_lease_params(lease, now, state, error, traceback),
                            _ENDING[state], write=True)[1] == 1
        if applied:
            self._tell_finished()
        return applied

    def dead_letter(self, lease: Lease, now: datetime, error: str,
                    *, traceback: str | None = None) -> bool:
        return self._end_lease(lease, now, JobState.DEAD_LETTERED, error, traceback)

    def quarantine(self, lease: Lease, now: datetime, error: str) -> bool:
        return self._end_lease(lease, now, JobState.QUARANTINED, error)

    def cancel_leased(self, lease: Lease, now: datetime, error: str) -> bool:
        return self._end_lease(lease, now, JobState.CANCELLED, error)

    def expire_lease(
        self, lease: Lease, now: datetime, due_at: datetime | None, error: str
    ) -> bool:
        retrying, dead_lettering = self._EXPIRE_LEASE
        applied = self._run(retrying if due_at is not None else dead_lettering, {
            **fence(lease), "now": self._to_db_time(now),
            "due_at": None if due_at is None else self._to_db_time(due_at, "due_at"),
            "error": error, "cancelled_error": CANCELLED_ON_REQUEST, **self._hints,
            "attempt_error": failed_attempt(lease, now, error, None),
        }, "expiring a lease", write=True)[1] == 1
        if applied:
            self._tell_finished()
        return applied

    def set_progress(self, lease: Lease, progress: Progress) -> bool:
        return self._run("set_progress", {**fence(lease), "progress": progress_json(progress)},
                         "storing a job's progress", write=True)[1] == 1

    def cancel(self, job_id: int, now: datetime) -> bool:
        applied = self._run("cancel", {"id": job_id, "now": self._to_db_time(now),
                                       "cancelled_error": CANCELLED_BEFORE_RUN},
                            "cancelling a job", write=True)[1] == 1
        if applied:  # (a scheduled job ended; a leased one only marked)
            self._tell_finished()
        return applied

    # -- Queue controls -----------------------------------------------------------------

    def _change_settings(self, queue: str, setting: str, **values: object) -> QueueSettings:
        """Change one of `queue`'s settings (`setting`: 'paused', 'limit' or 'rate', its
        values as keywords), keeping the others: the one upsert of them all."""
        params = {"queue": validate_entry(queue), "setting": setting, "paused": None,
                  "limit": None, "jobs": None, "per_us": None, "burst": None, **values}
        rows, _ = self._run("set_queue_settings", {**params, **self._hints},
                            "changing Queue settings", write=True)
        if setting == "rate" and is_family(queue):  # its members' buckets start full again
            self._run("reset_member_buckets", {"prefix": family_prefix(queue)},
                      "changing Queue settings", write=True)
        name, paused, limit = rows[0]
        if not paused:  # a resume, a new limit or rate may leave room: others look now
            self._wake_others([name])
        return QueueSettings(name, paused=bool(paused), limit=limit)

    def pause_queue(self, queue: str) -> QueueSettings:
        return self._change_settings(queue, "paused", paused=True)

    def resume_queue(self, queue: str) -> QueueSettings:
        return self._change_settings(queue, "paused", paused=False)

    def set_queue_limit(self, queue: str, limit: int | None) -> QueueSettings:
        return self._change_settings(queue, "limit", limit=validate_queue_limit(limit))

    def set_queue_rate(self, queue: str, rate: QueueRate | None) -> QueueRate | None:
        checked = check_rate(rate)
        if checked is None:
            self._change_settings(queue, "rate")
        else:
            self._change_settings(queue, "rate", jobs=checked.jobs, per_us=checked.per_us,
                                  burst=checked.burst)
        return checked

    def queue_infos(self, now: datetime) -> list[QueueInfo]:
        rows, _ = self._run("queue_infos", {"now": self._to_db_time(now)}, "reading Queues")
        settings: list[QueueSettings] = []
        rates: dict[str, RatedQueue] = {}
        buckets: dict[str, Bucket] = {}
        counts: dict[tuple[str, JobState], int] = {}
        due: dict[str, tuple[int, datetime | None]] = {}
        for queue, state, count, due_count, oldest, paused, limit, *rated in rows:
            if state is None:  # a settings row
                settings.append(QueueSettings(queue, paused=bool(paused), limit=limit))
                if rated[0] is not None:
                    rates[queue] = stored_rate(*rated)
                elif rated[3] is not None:  # the bucket of a member under a family's rate
                    buckets[queue] = Bucket(rated[3], rated[4] or 0)
                continue
            counts[(queue, STATES[state])] = count
            if due_count:
                due[queue] = (due_count, None if oldest is None else self._from_db_time(oldest))
        return build_queue_infos(settings, counts, due, rates, now, buckets)

    # -- schedules and the worker registry ----------------------------------------------

    def _fire_params(self, name: str, definition: str, job: NewJob, now: datetime
                     ) -> dict[str, object]:
        """fire_schedule.sql's parameters, after the checks every enqueue makes."""
        check_new_jobs([job])
        return {"name": name, "definition": definition,
                "fire_at": self._to_db_time(job.due_at, "due_at"), "job_name": job.name,
                "queue": job.queue, "args": job.args_json, "kwargs": job.kwargs_json,
                "now": self._to_db_time(now)}

    def _worker_params(self, worker: WorkerInfo, now: datetime) -> dict[str, object]:
        """register_worker.sql's parameters for the worker's own row."""
        return {
            "id": worker.id, "host": worker.host, "pid": worker.pid, "version": worker.version,
            "started_at": self._to_db_time(worker.started_at, "started_at"),
            "now": self._to_db_time(now), "dead_at": self._to_db_time(worker.dead_at, "dead_at"),
            "groups": groups_json(worker.groups),
            "in_flight": in_flight_json({g.name: g.in_flight for g in worker.groups}),
            "served": served_json(worker.served),
            "clock_offset": worker.clock_offset.total_seconds(),
        }

    def _refresh_params(self, worker_id: str, now: datetime, dead_at: datetime,
                        in_flight: Mapping[str, int], served: Sequence[ServedCount],
                        clock_offset: timedelta) -> dict[str, object]:
        """refresh_worker.sql's parameters for the worker's own row."""
        return {"id": worker_id, "now": self._to_db_time(now),
                "dead_at": self._to_db_time(dead_at, "dead_at"),
                "in_flight": in_flight_json(in_flight), "served": served_json(served),
                "clock_offset": clock_offset.total_seconds()}

    def list_schedules(self) -> list[ScheduleRow]:
        rows, _ = self._run("list_schedules", {}, "listing schedules")
        at = self._from_db_time
        return [
            ScheduleRow(name, definition, rule, timezone, job_name, queue, at(registered_at),
                        at(updated_at), None if last_fire_at is None else at(last_fire_at),
                        args, kwargs, bool(paused), bool(stored))
            for (name, definition, rule, timezone, job_name, queue, registered_at,
                 updated_at, last_fire_at, args, kwargs, paused, stored) in rows
        ]

    def set_stored_schedule(self, schedule: ScheduleRegistration, now: datetime) -> None:
        decode_arguments(schedule.args_json, schedule.kwargs_json)  # JSON, before writing
        _, changed = self._run("set_stored_schedule", {
            "name": schedule.name, "definition": schedule.definition, "rule": schedule.rule,
            "timezone": schedule.timezone, "job_name": schedule.job_name,
            "queue": schedule.queue, "args": schedule.args_json,
            "kwargs": schedule.kwargs_json, "now": self._to_db_time(now),
        }, "storing a schedule", write=True)
        if changed != 1:
            raise code_schedule_clash(schedule.name)

    def delete_stored_schedule(self, name: str) -> bool:
        return self._run("delete_stored_schedule", {"name": name}, "removing a schedule",
                         write=True)[1] == 1

    def set_schedule_paused(self, name: str, paused: bool, now: datetime) -> bool:
        return self._run("set_schedule_paused", {
            "name": name, "paused": paused, "now": self._to_db_time(now),
        }, "pausing a schedule" if paused else "resuming a schedule", write=True)[1] == 1

    def unregister_worker(self, worker_id: str) -> bool:
        return self._run("unregister_worker", {"id": worker_id}, "unregistering a worker",
                         write=True)[1] == 1

    def remove_dead_workers(self, dead_before: datetime) -> int:
        return self._run("remove_dead_workers", {
            "dead_before": self._to_db_time(dead_before, "dead_before")},
            "removing dead workers", write=True)[1]

    def prune_served(self, before: datetime) -> int:
        return self._run("prune_served", {"before": self._to_db_time(before, "before")},
                         "pruning the served history", write=True)[1]

    def list_workers(self, now: datetime) -> list[WorkerInfo]:
        self._to_db_time(now)  # refuses a naive `now`, as every call taking a time does
        rows, _ = self._run("list_workers", {}, "listing workers")
        at = self._from_db_time
        return [
            WorkerInfo(
                id=worker_id, host=host, pid=pid, version=version, started_at=at(started_at),
                last_seen=at(last_seen), dead_at=at(dead_at),
                groups=groups_from_json(groups, in_flight), served=served_from_json(served),
                alive=now < at(dead_at), clock_offset=timedelta(seconds=clock_offset),
            )
            for (worker_id, host, pid, version, started_at, last_seen, dead_at, groups,
                 in_flight, served, clock_offset) in rows
        ]

    def served_counts(self, since: datetime) -> list[ServedCount]:
        rows, _ = self._run("served_counts", {
            "since": self._to_db_time(minute_of(since), "since")},
            "reading the served history")
        return [
            ServedCount(group=group, queue=queue, outcome=outcome, count=count,
                        minute=self._from_db_time(minute))
            for minute, group, queue, outcome, count in rows
        ]

    def worker_groups(self) -> list[WorkerGroupInfo]:
        rows, _ = self._run("worker_groups", {}, "reading Worker Groups")
        return [
            group_from_columns(name, kind, queues, weights, pool_size,
                               self._from_db_time(seen_at))
            for name, kind, queues, weights, pool_size, seen_at in rows
        ]

    # -- group policies -------------------------------------------------------------------

    def set_group_policy(self, group: str, policy: DispatchPolicy | None,
                         now: datetime) -> int:
        params: dict[str, object] = {"group": validate_group_name(group), "kind": None,
                                     "queues": None, "weights": None,
                                     "now": self._to_db_time(now)}
        if policy is not None:
            params.update(policy_columns(checked_policy(group, policy)))
        rows, _ = self._run("set_group_policy", params, "setting a group policy", write=True)
        return int(rows[0][0])

    def group_policy(self, group: str) -> StoredPolicy | None:
        rows, _ = self._run("group_policy", {"group": validate_group_name(group)},
                            "reading a group policy")
        if not rows or rows[0][0] is None:
            return None
        kind, queues, weights, version, updated_at = rows[0]
        return stored_policy(group, kind, queues, weights, int(version),
                             self._from_db_time(updated_at))

    def group_policy_versions(self) -> dict[str, int]:
        rows, _ = self._run("group_policy_versions", {}, "reading group policy versions")
        return {name: int(version) for name, version in rows}


    # -- leader leases --------------------------------------------------------------------

    def take_leadership(self, name: str, owner: str, now: datetime,
                        ttl: timedelta) -> LeaderLease | None:
        check_leadership(name, owner, ttl)
        rows, _ = self._run("take_leadership", {
            "name": name, "owner": owner, "now": self._to_db_time(now),
            "expires_at": self._to_db_time(now + ttl, "now + ttl")},
            "taking a leader lease", write=True)
        return self._leader_lease(rows)

    def _leader_lease(self, rows: Sequence[Row]) -> LeaderLease | None:
        """The lease of an (owner, expires_at) row; None without one."""
        return LeaderLease(str(rows[0][0]), self._from_db_time(rows[0][1])) if rows else None

    def give_up_leadership(self, name: str, owner: str) -> bool:
        check_leadership(name, owner)
        return self._run("give_up_leadership", {"name": name, "owner": owner},
                         "giving a leader lease up", write=True)[1] == 1

    def leader(self, name: str, now: datetime) -> str | None:
        check_leadership(name)
        rows, _ = self._run("leader", {"name": name, "now": self._to_db_time(now)},
                            "reading a leader lease")
        return str(rows[0][0]) if rows else None
