"""Strict: one claim per pass over the ordered Queues, sized to the free capacity; the jobs
are dispatched in the order the store returned them (the first Queue's due jobs first).

Pure: no I/O, no clock, no asyncio, no randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

from rota.core.dispatch.plan import ClaimRequest, Dispatcher, PassPlan, check_count
from rota.core.policy import Strict

T = TypeVar("T")


class StrictPass(PassPlan[T]):
    def __init__(self, queues: tuple[str, ...], free: int) -> None:
        self._pending = [ClaimRequest(queues, free)] if free > 0 else []
        self._items: list[T] = []
        self._issued = 0

    def next_claims(self) -> list[ClaimRequest]:
        pending, self._pending = self._pending, []
        return pending

    def claimed(
        self, request: ClaimRequest, items: Sequence[T], *,
        controlled: Collection[str] = (), drained: Collection[str] = (),
    ) -> None:
        check_count(request.limit, items)
        self._issued += 1
        self._items.extend(items)

    def claim_failed(self, request: ClaimRequest) -> None:
        self._issued += 1
        self._pending = []

    def cut_short(self) -> None:
        self._pending = []

    def dispatch_order(self) -> list[T]:
        self._pending = []
        return list(self._items)

    def serve(self) -> None:
        pass  # Strict keeps no dispatch state.

    def skip(self) -> None:
        pass

    @property
    def claims_issued(self) -> int:
        return self._issued


class StrictDispatcher(Dispatcher):
    """A Strict group's dispatch state: none beyond its ordered Queues."""

    def __init__(self, policy: Strict) -> None:
        self.policy = policy
        self.queues = policy.queues

    def begin_pass(
        self, free: int, *, recheck: bool = False, queue_of: Callable[[T], str] | None = None
    ) -> PassPlan[T]:
        return StrictPass(self.queues, free)
