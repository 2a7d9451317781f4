"""Duties: the housekeeping tasks a runtime runs beside its groups, and what they see.

A duty is one module of its own (`sweeper`, `retention`, `schedules`, `registry`,
`checkpoint`, `unserved`): an async callable taking the runtime, started with it under
`supervise` and cancelled when it stops. It owns its cadence, survives its own errors
and keeps its state on its object, so that a restart resumes it. It is given the runtime
as a `DutyRuntime`: the few things a duty may use, so that each can be tested alone
with a stand-in, and the duties' modules never import the runtime (it sits above them).
Imports the core, the store contract and the group loop (for its type).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from rota.core.clock import Clock
from rota.store.base import Store
from rota.worker.loop import GroupLoop

T = TypeVar("T")


class DutyRuntime(Protocol):
    """The runtime, as its duties see it (`rota.worker.runtime.Runtime` is one)."""

    @property
    def store(self) -> Store: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def groups(self) -> Sequence[GroupLoop]: ...

    @property
    def stopping(self) -> bool: ...

    async def store_call(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run the blocking `call(*args, **kwargs)` on a store thread, within the duties'
        deadline (rota.worker.deadlines); `StoreTimeout` past it."""
        ...

    async def sleep_unless_stopping(self, delay_s: float) -> None:
        """Wait `delay_s`, or less if shutdown begins meanwhile."""
        ...

    def hint(self, queue: str) -> None:
        """Jobs were enqueued into `queue`: wake the groups serving it. Any thread."""
        ...

    def policies_offered(self) -> None:
        """Some groups were offered a new policy: wake them so they switch. Any thread."""
        ...


# A periodic housekeeping task run beside the groups: started with the runtime, cancelled
# when it stops. It owns its cadence and must survive its own errors.
Duty = Callable[[DutyRuntime], Coroutine[Any, Any, None]]


@runtime_checkable
class StoppingDuty(Protocol):
    """A duty with work to do at a graceful stop, after the groups stopped (the store
    threads still run): `at_stop` is awaited, bounded by FLUSH_TIMEOUT_S. Not at abort."""

    def __call__(self, runtime: DutyRuntime, /) -> Coroutine[Any, Any, None]: ...

    async def at_stop(self, runtime: DutyRuntime, /) -> None: ...


@runtime_checkable
class HintedDuty(Protocol):
    """A duty told of the wake-up hints that name a Queue none of the runtime's groups
    serves (`queue_hinted`, on the loop thread; it must return at once)."""

    def __call__(self, runtime: DutyRuntime, /) -> Coroutine[Any, Any, None]: ...

    def queue_hinted(self, queue: str, /) -> None: ...
