"""Job definitions: what `@app.job(...)` returns, and how jobs are enqueued.

A `JobDefinition` wraps the handler (calling it calls the handler directly) and enqueues
jobs through its App. `configure(...)` returns a `ConfiguredJob` that overrides the Queue or
the due time for the enqueues made through it. There is no per-job priority: priority lives
on the consumer's Dispatch Policy.

Everything is checked before anything is stored: a bad Queue name, a naive datetime or an
argument that is not JSON fails with a clear error and leaves the store untouched.

A definition knows its App only as a `JobHost` (the store, the clock, the payload limit)
plus the `on_enqueued` callback the App passes in, which wakes the App's groups: the App
imports this module, so this module never imports the App.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Generic, ParamSpec, Protocol, TypeVar

from rota.core.clock import Clock, ensure_utc
from rota.core.durations import Duration, due_after, to_timedelta
from rota.core.jobs import (
    NewJob,
    PayloadTooLarge,
    check_after_outcome,
    check_parent_ids,
    encode_arguments,
    validate_job_key,
)
from rota.core.meta import encode_meta
from rota.core.queues import validate_queue_name
from rota.core.retry import RetryPolicy
from rota.core.typed_arguments import typed_arguments
from rota.store.base import AsyncTransactionalEnqueue, Store
from rota.worker.tracing import current_trace_context

P = ParamSpec("P")
R = TypeVar("R")

NO_PRIORITY = (
    "rota has no per-job priority: put urgent work on its own Queue and give the Worker "
    "Group a Dispatch Policy (Strict or Weighted) that prefers it"
)

# One entry of enqueue_many: a tuple of positional args, or an (args, kwargs) pair given
# as a mapping {"args": [...], "kwargs": {...}}.
ManyEntry = Sequence[Any] | Mapping[str, Any]


class JobHost(Protocol):
    """What a job definition needs of the App that registered it (`rota.App` is one)."""

    @property
    def store(self) -> Store: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def max_payload_bytes(self) -> int: ...


class ConfiguredJob(Generic[P, R]):
    """A job definition with enqueue-time overrides (Queue, due time)."""

    def __init__(
        self, definition: JobDefinition[P, R], queue: str, due: datetime | None,
        delay: timedelta | None, connection: object | None = None, key: str | None = None,
        debounce: timedelta | None = None, max_wait: timedelta | None = None,
        after: tuple[int, ...] = (), after_outcome: str = "succeeded",
        meta_json: str | None = None,
        expires: timedelta | datetime | None = None,
    ) -> None:
        self._definition = definition
        self.queue = validate_queue_name(queue)
        self._due = due
        self._delay = delay
        self._connection = connection
        self._key = None if key is None else validate_job_key(key)
        self._debounce = debounce
        self._max_wait = max_wait
        self._after = after
        self._after_outcome = after_outcome
        self._meta_json = meta_json
        self._expires = expires

    def _store_jobs(self, jobs: Sequence[NewJob], now: datetime) -> list[int]:
        """Store `jobs`: on the caller's connection when one was configured (woken on
        commit, by the database: nothing to notify here, as a hint now would come before
        the jobs are visible), else through the store, waking this process's groups."""
        app = self._definition.app
        if self._connection is not None:
            return app.store.enqueue_on(self._connection, jobs, now)
        ids = app.store.enqueue(jobs, now)
        self._definition._on_enqueued((self.queue,))
        return ids

    def _due_at(self, now: datetime) -> datetime:
        if self._debounce is not None:
            return due_after(now, self._debounce, "debounce")
        if self._due is not None:
            return self._due
        if self._delay is not None:
            return due_after(now, self._delay)
        return now

    def _new_job(
        self, args: Sequence[object], kwargs: Mapping[str, object], now: datetime,
        due_at: datetime | None = None, key: str | None = None,
        trace_context: str | None = None, meta_json: str | None = None,
    ) -> NewJob:
        definition = self._definition
        definition._check_arguments(args, kwargs)
        if definition.typed is not None:  # dataclass or pydantic parameters, as JSON
            args, kwargs = definition.typed.to_json(args, kwargs)
        args_json, kwargs_json = encode_arguments(
            args, kwargs, self._definition.app.max_payload_bytes
        )
        due = self._due_at(now) if due_at is None else due_at
        return NewJob(
            name=self._definition.name, queue=self.queue, due_at=due,
            args_json=args_json, kwargs_json=kwargs_json,
            key=self._key if key is None else key, trace_context=trace_context,
            debounced=self._debounce is not None, max_wait=self._max_wait,
            parents=self._after, after_outcome=self._after_outcome,
            meta_json=self._meta_json if meta_json is None else meta_json,
            expires_at=None if self._expires is None else _expires_at(self._expires, due),
        )

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> int:
        """Store one job; return its id (with `configure(key=...)`, while a job of this
        name and key is scheduled or leased: that job's id, and nothing is stored; with
        `configure(key=..., debounce=...)`, while one is scheduled: that job's id, and that
        job takes these arguments and its new due time).

        Raises:
            TypeError: if the arguments do not fit the handler's signature, or naming an
                argument that is not JSON-serialisable (nothing stored); naming a typed
                argument (a dataclass or pydantic model parameter) that is neither an
                instance nor a dict, or a dict with unknown or missing dataclass fields.
            ValueError: naming a typed argument its pydantic model (or its dataclass's
                `__post_init__`) refuses (nothing stored).
            rota.PayloadTooLarge: (a ValueError) if the arguments encode to more JSON than
                the App's `max_payload_bytes` (nothing stored).
        """
        now = self._definition.app.clock.now()
        job = self._new_job(args, kwargs, now, trace_context=current_trace_context())
        return self._store_jobs([job], now)[0]

    async def enqueue_async(self, *args: P.args, **kwargs: P.kwargs) -> int:
        """`enqueue` from async code: the store call runs in a thread, off the event loop.
        On a configured `connection=` it runs on the caller's connection: awaited for a
        `psycopg.AsyncConnection`, inline for a sync one (a sqlite3 connection belongs to
        its thread)."""
        now = self._definition.app.clock.now()
        job = self._new_job(args, kwargs, now, trace_context=current_trace_context())
        if self._connection is not None:
            store = self._definition.app.store
            if isinstance(store, AsyncTransactionalEnqueue):  # psycopg AsyncConnection
                return (await store.enqueue_on_async(self._connection, [job], now))[0]
            return self._store_jobs([job], now)[0]
        ids = await asyncio.to_thread(self._store_jobs, [job], now)
        return ids[0]

    def enqueue_many(self, entries: Iterable[ManyEntry]) -> list[int]:
        """Store many jobs in one round trip, all or none; return their ids in order.

        Each entry is a sequence of positional arguments (`("a@x", "hi")`), or a mapping
        `{"args": [...], "kwargs": {...}, "key": "...", "meta": {...}}` (each part
        optional; `key` makes that entry a unique job, overriding `configure(key=...)`;
        `meta` replaces `configure(meta=...)` for that entry). Entries with the same
        key as a live job, or as an earlier entry of the batch, store nothing: their id
        is that job's (the earlier entry's arguments win).

        With `configure(key=..., debounce=...)` every entry is debounced, each by its own
        key (an entry's `key` overrides the configured one): entries of one key make or
        update one job, whose arguments are the *last* entry's (the last enqueue wins, as
        with separate calls), and all of them answer its id.

        Raises:
            TypeError: naming the entry whose arguments do not fit the handler's signature,
                or the entry and argument that is not JSON-serialisable; nothing of the
                batch is stored.
        """
        app = self._definition.app
        now = app.clock.now()
        due_at = self._due_at(now)  # the same for every entry of the call
        trace_context = current_trace_context()  # likewise (OpenTelemetry, when installed)
        jobs: list[NewJob] = []
        args: Sequence[object]
        kwargs: Mapping[str, object]
        for index, entry in enumerate(entries):
            key: str | None = None
            meta_json: str | None = None
            if type(entry) is tuple:  # the common form, without the ABC checks below
                args, kwargs = entry, {}
            elif isinstance(entry, Mapping):
                unknown = set(entry) - {"args", "kwargs", "key", "meta"}
                if unknown:
                    raise TypeError(
                        f"enqueue_many entry {index}: a mapping takes only 'args', "
                        f"'kwargs', 'key' and 'meta'; got {sorted(unknown)}"
                    )
                if entry.get("meta") is not None:
                    try:
                        meta_json = encode_meta(entry["meta"])
                    except (TypeError, ValueError) as error:
                        raise type(error)(f"enqueue_many entry {index}: {error}") from None
                args, kwargs = entry.get("args", ()), entry.get("kwargs", {})
                if entry.get("key") is not None:
                    try:
                        key = validate_job_key(entry["key"])
                    except ValueError as error:
                        raise ValueError(f"enqueue_many entry {index}: {error}") from None
            elif isinstance(entry, str | bytes) or not isinstance(entry, Sequence):
                raise TypeError(
                    f"enqueue_many entry {index} must be a tuple of arguments or a mapping "
                    f"with 'args'/'kwargs'; got {entry!r}"
                )
            else:
                args, kwargs = entry, {}
            try:
                jobs.append(self._new_job(args, kwargs, now, due_at, key, trace_context,
                                          meta_json))
            except TypeError as error:
                raise TypeError(f"enqueue_many entry {index}: {error}") from None
            except PayloadTooLarge:
                raise
            except ValueError as error:  # a typed argument's validation
                raise ValueError(f"enqueue_many entry {index}: {error}") from None
        if not jobs:
            return []
        return self._store_jobs(jobs, now)


def _expires_option(expires: object) -> timedelta | datetime | None:
    """configure()'s `expires`: a duration (timedelta or seconds, 0 or more) counted from
    each job's due time, or an aware datetime; None: the jobs never expire.

    Raises:
        TypeError: for anything else (a bool included).
        ValueError: for a negative, NaN, infinite or too long duration, or a naive datetime.
    """
    if expires is None:
        return None
    if isinstance(expires, datetime):
        return ensure_utc(expires, "expires")
    if isinstance(expires, bool) or not isinstance(expires, timedelta | int | float):
        raise TypeError(
            "configure(expires=...) takes a duration (a timedelta or seconds) counted from "
            "the job's due time, or an aware datetime; got "
            f"{expires!r} ({type(expires).__name__})")
    return to_timedelta(expires, "configure(expires=...)", allow_zero=True)


def _expires_at(expires: timedelta | datetime, due_at: datetime) -> datetime:
    """The instant after which a job due at `due_at` never starts (`configure(expires=)`).

    Raises:
        ValueError: if a duration puts it past the year 9999 (nothing stored).
    """
    if isinstance(expires, datetime):
        return expires
    try:
        return due_at + expires
    except OverflowError:
        raise ValueError(
            f"configure(expires=...) of {expires.total_seconds():g} s after the due time "
            "puts the expiry past the year 9999; give a shorter one, or None for no expiry"
        ) from None


def _debounce_options(
    key: str | None, debounce: Duration | None, max_wait: Duration | None,
    due: datetime | None, delay: Duration | None,
) -> tuple[timedelta | None, timedelta | None]:
    """configure()'s `debounce` and `max_wait` as timedeltas, checked together with the
    options they depend on.

    Raises:
        TypeError: a duration that is neither a timedelta nor a number.
        ValueError: a rule of `configure` broken, naming the fix.
    """
    if debounce is None:
        if max_wait is not None:
            raise ValueError(
                "configure(max_wait=...) caps a debounced job's due time: give debounce= "
                "(and key=) with it, e.g. configure(key=k, debounce=5, max_wait=60)")
        return None, None
    window = to_timedelta(debounce, "debounce")
    if key is None:
        raise ValueError(
            "configure(debounce=...) debounces the enqueues of one key: give key= with it, "
            "e.g. configure(key=f'reindex-{id}', debounce=5)")
    if due is not None or delay is not None:
        raise ValueError(
            "configure(debounce=...) sets the due time itself (now + debounce): leave out "
            "due= and delay=")
    if max_wait is None:
        return window, None
    cap = to_timedelta(max_wait, "max_wait")
    if cap < window:
        raise ValueError(
            f"configure(max_wait=...) must be at least debounce: got max_wait "
            f"{cap.total_seconds():g} s and debounce {window.total_seconds():g} s; give a "
            "longer max_wait or a shorter debounce")
    return window, cap


def _readable_signature(func: Callable[..., object]) -> inspect.Signature | None:
    """The handler's signature, read once at registration; None when Python cannot read
    it."""
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


def _plain_positional_range(signature: inspect.Signature | None) -> tuple[int, float] | None:
    """(fewest, most) positional arguments that bind to `signature` when no keyword
    argument is given, or None when keywords are required (keyword-only parameters
    without a default). Binding costs 2-4 µs; this check, a tenth of that."""
    if signature is None:
        return None
    fewest, most = 0, 0.0
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            most += 1
            if parameter.default is parameter.empty:
                fewest = int(most)
        elif parameter.kind is parameter.VAR_POSITIONAL:
            most = float("inf")
        elif parameter.kind is parameter.KEYWORD_ONLY and parameter.default is parameter.empty:
            return None
    return fewest, most


class JobDefinition(ConfiguredJob[P, R]):
    """A registered job. Call it to run the handler directly; `enqueue` to run it later."""

    def __init__(
        self, app: JobHost, name: str, func: Callable[P, R], queue: str,
        retry: RetryPolicy | None, *, on_enqueued: Callable[[Iterable[str]], None],
    ) -> None:
        self.app = app
        # Told the Queues of the jobs this definition stored through the App's store.
        self._on_enqueued = on_enqueued
        self.name = name
        self.func = func
        self.retry = retry
        super().__init__(self, queue, None, None)
        self.__doc__ = func.__doc__
        self.__wrapped__ = func
        self._signature = _readable_signature(func)
        self._positional_range = _plain_positional_range(self._signature)
        # Parameters annotated with a dataclass or a pydantic model (None: none): their
        # arguments are validated and stored as JSON, and given back as instances.
        self.typed = typed_arguments(name, func)

    def _check_arguments(self, args: Sequence[object], kwargs: Mapping[str, object]) -> None:
        """Check that the handler could be called with `args` and `kwargs`.

        Handlers whose signature Python cannot read (some builtins and C extensions) are
        not checked.

        Raises:
            TypeError: naming the job, its signature and what does not fit.
        """
        signature = self._signature
        if signature is None:
            return
        span = self._positional_range
        if span is not None and not kwargs and span[0] <= len(args) <= span[1]:
            return  # the common call, positional arguments only: no bind needed
        try:
            signature.bind(*args, **kwargs)
        except TypeError as error:
            plain = signature.replace(
                parameters=[p.replace(annotation=inspect.Parameter.empty)
                            for p in signature.parameters.values()],
                return_annotation=inspect.Signature.empty,
            )
            raise TypeError(
                f"job {self.name!r}: the arguments do not fit its handler "
                f"{getattr(self.func, '__name__', 'handler')}{plain}: {error}; "
                "nothing was stored"
            ) from None

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.func(*args, **kwargs)

    def configure(
        self,
        *,
        queue: str | None = None,
        due: datetime | None = None,
        delay: Duration | None = None,
        connection: object | None = None,
        key: str | None = None,
        debounce: Duration | None = None,
        max_wait: Duration | None = None,
        after: Iterable[int] | None = None,
        after_outcome: str | None = None,
        meta: Mapping[str, object] | None = None,
        expires: Duration | datetime | None = None,
        **unknown: object,
    ) -> ConfiguredJob[P, R]:
        """Override the Queue or the due time for enqueues made through the result, or
        enqueue inside the caller's own database transaction.

        Args:
            queue: the Queue to put the jobs on (default: the definition's Queue).
            due: an aware datetime when the jobs become due.
            delay: a timedelta or seconds from now; not together with `due`.
            connection: the caller's open database connection: the jobs are written on it,
                inside its current transaction, and exist if and only if that transaction
                commits; workers are woken on commit. A `psycopg.Connection` for a
                PostgreSQL store, a `sqlite3.Connection` to the store's file for a SQLite
                store (docs/integrations.md). rota never commits or rolls it back.
            key: makes the jobs unique: while a job of this job name and key is scheduled
                or leased, an enqueue stores nothing and returns that job's id. A str of
                1 to 200 printable characters.
            debounce: with `key`, debounces the jobs instead (a timedelta or seconds,
                positive): the enqueue is due `debounce` from now, and while a job of this
                job name and key is still scheduled, a new enqueue makes no new job but
                gives that one its arguments and moves its due time to now + `debounce`,
                and returns its id. Once that job is claimed, the next enqueue makes a new
                job. A debounced key is not a unique key: the two do not see each other.
            max_wait: with `debounce`, the latest a debounced job is due: never past its
                first enqueue + `max_wait` (a timedelta or seconds, at least `debounce`).
                Without it, enqueues that keep coming keep moving the job back.
            after: ids of existing jobs (its parents) this one runs after: it is stored
                `waiting` and becomes `scheduled` (in its own Queue, due at the later of
                now and its own due time) in the transaction that finishes its last
                parent (docs/workflows.md). An empty list: no parents.
            after_outcome: "succeeded" (the default): run once every parent succeeded; a
                parent that ends dead_lettered, quarantined or cancelled cancels this job
                and its own children. "finished": run once every parent finished,
                whatever happened.
            meta: a small JSON object stored with each job (a dict with str keys, at most
                4 KiB as UTF-8 JSON), e.g. `{"tenant": "acme", "order": 42}`: shown with
                the job, read by its handler as `rota.current_job().meta`, and searched by
                `app.find_jobs(meta=...)`, `cancel_jobs` and `requeue_jobs`.
            expires: no attempt starts after this: a duration (a timedelta or seconds, 0
                or more) counted from each job's due time, or an aware datetime. A claim
                that finds the job due later (its first attempt, a retry or a snooze)
                ends it `cancelled` without running it, `last_error` "Expired: not
                started by <time> UTC", outcome `expired`. An expiry already past at
                enqueue is accepted: the job ends so at its first claim
                (docs/decisions/0071). A running attempt is never stopped by it. For a
                job enqueued `after=` others, the duration counts from its own due time
                at enqueue, not from its parents' end.

        Raises:
            TypeError: for an unknown option (`priority` included: rota has none). A
                connection of the wrong kind is a TypeError at enqueue.
            ValueError: for a bad Queue name, a naive `due`, a negative delay, both `due`
                and `delay`, or a bad key; for `debounce` without `key`, or with `due` or
                `delay`; for `max_wait` without `debounce`, or shorter than it; for
                `after` with `key`, or `after_outcome` without `after`; for a negative,
                NaN or too long `expires`, or a naive one. At enqueue, for an `after` id
                that is no job, or an `expires` duration past the year 9999 (nothing
                stored). TypeError for `meta` that is not a dict of JSON values with str
                keys, ValueError for one over 4 KiB.
        """
        if "priority" in unknown:
            raise TypeError(NO_PRIORITY)
        if unknown:
            raise TypeError(
                f"configure() got unknown option(s) {sorted(unknown)}; it takes queue=, due=, "
                "delay=, key=, debounce=, max_wait=, after=, after_outcome=, meta=, expires= "
                "and connection="
            )
        if due is not None and delay is not None:
            raise ValueError("give configure() either due= or delay=, not both")
        debounce_s, max_wait_s = _debounce_options(key, debounce, max_wait, due, delay)
        parents = _after_options(after, after_outcome, key)
        meta_json = None if meta is None else encode_meta(meta)
        expiry = _expires_option(expires)
        return ConfiguredJob(
            self,
            self.queue if queue is None else queue,
            None if due is None else ensure_utc(due, "due"),
            None if delay is None else to_timedelta(delay, "delay", allow_zero=True),
            connection,
            key,
            debounce_s,
            max_wait_s,
            parents,
            "succeeded" if after_outcome is None else after_outcome,
            meta_json,
            expiry,
        )

    def __repr__(self) -> str:
        return f"<JobDefinition {self.name!r} queue={self.queue!r}>"


def _after_options(after: Iterable[int] | None, after_outcome: str | None,
                   key: str | None) -> tuple[int, ...]:
    """The parent ids `configure(after=...)` names, checked with `after_outcome`.

    Raises:
        TypeError, ValueError: see `configure`.
    """
    if after is None:
        if after_outcome is not None:
            raise ValueError(
                "after_outcome= applies to a job enqueued after other jobs; give after=[ids] "
                "too, or leave after_outcome out"
            )
        return ()
    if after_outcome is not None:
        check_after_outcome(after_outcome)
    parents = check_parent_ids(after)
    if parents and key is not None:
        raise ValueError(
            "a job enqueued after other jobs (after=) cannot have a key (unique or "
            "debounced); enqueue the keyed job from the last parent's handler instead"
        )
    return parents
