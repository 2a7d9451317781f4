"""What a running group needs of the runtime that runs it, as protocols.

`GroupLoop`, its heartbeats and its outcome writer are given their `Runtime` as a
`GroupHost`: the shared settings (store, clock, handlers, observers), the store threads,
the stop signal and the process-wide suspect isolation. The runtime builds the groups,
so the groups' modules name it by this protocol instead of importing it: the runtime
sits above them and the imports go one way only. Imports the core, the store contract
and the worker's own leaf modules.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from rota.core.clock import Clock
from rota.store.base import Store
from rota.worker.context import ProgressWriter
from rota.worker.deadlines import CallKind
from rota.worker.group import Handler
from rota.worker.held import Held
from rota.worker.hooks import AttemptHook, RunObserver
from rota.worker.store_health import StoreHealth

T = TypeVar("T")


class JobObserver(RunObserver, Protocol):
    """Told after every pass's claims how long they took (store round trips included)
    and how many jobs they returned, and after every handler how long it ran
    (perf_counter seconds; `RunObserver`, through an attempt hook). Called on the loop
    thread, per job for `job_ran`: keep them quick. Without observers the groups read
    no timer at all."""

    def claimed(self, group: str, round_trip_s: float, jobs: int, /) -> None: ...


class SuspectOwner(Protocol):
    """The group that claimed the process's suspect job (rota.core.suspects): the
    runtime starts the suspect on it once every group is idle."""

    @property
    def name(self) -> str: ...

    def holds(self, held: Held, /) -> bool: ...

    def start_job(self, held: Held, /) -> None: ...


class GroupHost(Protocol):
    """The runtime, as its groups see it (`rota.worker.runtime.Runtime` is one)."""

    @property
    def store(self) -> Store: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def handlers(self) -> Mapping[str, Handler]: ...

    @property
    def observers(self) -> Sequence[JobObserver]: ...

    @property
    def attempt_hooks(self) -> tuple[AttemptHook, ...]:
        """Told of every job attempt (rota.worker.hooks); empty: the path without hooks."""
        ...

    @property
    def claims_take_outcomes(self) -> bool: ...

    @property
    def progress(self) -> ProgressWriter | None:
        """Writes handlers' progress reports (rota.worker.progress); set at start."""
        ...

    @property
    def stop_flag(self) -> threading.Event:
        """Set once shutdown begins; read by store threads mid-pass."""
        ...

    @property
    def stopping(self) -> bool: ...

    @property
    def isolating(self) -> bool:
        """A suspect waits to run alone, or runs alone: no group claims meanwhile."""
        ...

    @property
    def store_unreachable(self) -> bool:
        """A store call failed and none answered since: no group claims meanwhile."""
        ...

    @property
    def health(self) -> StoreHealth: ...

    async def store_call(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...

    async def call_store(self, kind: CallKind, call: Callable[..., T], *args: Any,
                         **kwargs: Any) -> T:
        """`call(*args, **kwargs)` on a store thread within `kind`'s deadline; raises
        `StoreTimeout` (a `StoreError`) when it does not answer in time."""
        ...

    async def sleep_unless_stopping(self, delay_s: float) -> None: ...

    def adopt_suspect(self, group: SuspectOwner, held: Held) -> None: ...

    def start_suspect_if_idle(self) -> None: ...

    def after_outcomes_written(self) -> None: ...

    def forget_suspect(self, handed_back: Sequence[Held]) -> None: ...
