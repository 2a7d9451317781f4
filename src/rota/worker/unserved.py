"""The unserved-Queues duty: a worker warns when a Queue has due jobs nobody serves.

Jobs enqueued on a Queue that no live worker serves wait silently (a typo in a Queue
name, a group left out with `--group`, a policy changed with `rota policy` that dropped
it). The worker looks at start, then surveys every `SURVEY_S`, and looks again soon
(`HINT_LOOK_S`) after a wake-up hint names a Queue none of its own groups serves. A look
reads the store's Queues, the registry's live workers and the stored policies, and asks
rota.core.serving who serves each Queue with due jobs: the groups of live workers under
their policies in force, this worker's own groups under the policies they run now.

It logs one WARNING per Queue, the first time it finds it with due jobs and unserved, once
per worker process: a Queue found served again (or without due jobs) is forgotten, so a
Queue unserved again later is warned about again. A hint for a Queue found served, or
already warned about, costs nothing until the next survey. A store error is logged at
DEBUG and the next look tries again.

State lives on the object (the supervisor may restart `__call__`); the hints come on the
loop thread (`Runtime` calls `queue_hinted` for a Queue none of its groups serves).
Imports the core, the store contract, the duty protocol and logging only.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from rota.core.clock import Clock
from rota.core.plurals import counted
from rota.core.policy import DispatchPolicy
from rota.core.queue_controls import QueueInfo
from rota.core.serving import policies_of, unserved_with_due_jobs
from rota.store.base import StoreError
from rota.store.serving_view import policies_in_force
from rota.worker.duty import DutyRuntime

logger = logging.getLogger("rota")

# How often a worker surveys the store's Queues for due jobs nobody serves.
SURVEY_S: Final = 60.0
# How soon after a hint for a Queue none of its groups serves a worker looks (hints in
# between are looked at together).
HINT_LOOK_S: Final = 1.0


class UnservedDuty:
    """Warns once per Queue with due jobs that no live worker serves (see the module)."""

    def __init__(self, clock: Clock, *, survey_s: float = SURVEY_S,
                 hint_look_s: float = HINT_LOOK_S) -> None:
        self.clock = clock
        self.survey_s = survey_s
        self.hint_look_s = hint_look_s
        self.warned: set[str] = set()  # Queues warned about, unserved at the last look
        self.looks = 0  # looks that read the store (surveys and hints), for tests
        # Queue -> its due jobs if the last look found it unserved, else 0, for every
        # Queue of that look, a family's entry being none (rota.metrics:
        # `rota_queue_unserved_jobs`). Replaced whole.
        self.unserved_jobs: dict[str, int] = {}
        # Loop thread only: Queues hinted since the last look, and those a look found
        # served or warned about (their hints wait for the next survey).
        self._hinted: set[str] = set()
        self._settled: set[str] = set()
        self._hint: asyncio.Event | None = None

    def queue_hinted(self, queue: str) -> None:
        """A wake-up hint named `queue`, which none of this worker's groups serves
        (loop thread)."""
        if queue in self._settled or queue in self._hinted:
            return
        self._hinted.add(queue)
        if self._hint is not None:
            self._hint.set()

    async def look(self, runtime: DutyRuntime) -> list[QueueInfo]:
        """One look at the store; warn about each newly unserved Queue. Returns the
        Queues with due jobs found unserved."""
        store = runtime.store
        now = self.clock.now()
        own: dict[str, DispatchPolicy] = {g.name: g.runner.policy for g in runtime.groups}

        def read() -> tuple[list[QueueInfo], dict[str, DispatchPolicy]]:
            return store.queue_infos(now), policies_of(policies_in_force(store, now))

        hinted, self._hinted = self._hinted, set()
        try:
            infos, live = await runtime.store_call(read)
        except StoreError as error:
            logger.debug("unserved-Queue check skipped: %s", error)
            return []
        self.looks += 1
        unserved = unserved_with_due_jobs(infos, {**live, **own})
        names = {info.name for info in unserved}
        for info in unserved:
            if info.name in self.warned:
                continue
            self.warned.add(info.name)
            logger.warning(
                "Queue %r has %s but no live worker serves it (this worker runs %s); they "
                "wait until a worker whose group's policy in force names %r runs (check the "
                "Queue name, or add it to a group's policy: `rota policy`)",
                info.name, counted(info.due, "due job"),
                ", ".join(group.name for group in runtime.groups), info.name,
            )
        self.warned &= names  # served again, or no due jobs: may warn again later
        self.unserved_jobs = {info.name: info.due if info.name in names else 0
                              for info in infos if info.members is None}
        # Hinted again during the look: looked at again (the read may predate that job).
        self._settled |= hinted - self._hinted
        return unserved

    async def __call__(self, runtime: DutyRuntime) -> None:
        self._hint = asyncio.Event()
        loop = asyncio.get_running_loop()
        next_survey = loop.time()
        while not runtime.stopping:
            if loop.time() >= next_survey:
                self._settled.clear()  # a survey looks at every Queue again
                next_survey = loop.time() + self.survey_s
            await self.look(runtime)
            self._hint.clear()
            if self._hinted:
                self._hint.set()  # hinted during the look: look again soon
            try:
                await asyncio.wait_for(self._hint.wait(),
                                       max(0.0, next_survey - loop.time()))
            except TimeoutError:
                continue
            await runtime.sleep_unless_stopping(self.hint_look_s)
