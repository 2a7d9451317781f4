"""The unserved-Queues check: a one-shot duty that runs when a worker starts.

Jobs enqueued on a Queue that no Worker Group of this worker serves would wait silently
(a typo in a Queue name, a group left out with `--group`). At start the worker reads the
store's Queues once and logs one WARNING per Queue that has due jobs and that none of its
groups serves. It is a hint, not a guarantee: another worker process may serve that Queue
(the worker registry will let it tell). A store error here is logged at DEBUG and ignored.

A duty of its own (`Runtime(duties=...)`, started by the runtime under `supervise`).
Imports the core, the store contract, the duty protocol and logging only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from rota.core.clock import Clock
from rota.core.groups import WorkerGroupOptions
from rota.core.plurals import counted
from rota.core.queue_controls import QueueInfo
from rota.core.serving import served_by, unserved_with_due_jobs
from rota.store.base import StoreError
from rota.worker.duty import Duty, DutyRuntime

logger = logging.getLogger("rota")


def unserved_queues_duty(
    groups: Iterable[WorkerGroupOptions], clock: Clock
) -> Duty:
    """The duty that warns once about Queues with due jobs that `groups` do not serve."""
    selected = list(groups)
    serving = served_by(selected)
    names = ", ".join(options.name for options in selected)

    async def duty(runtime: DutyRuntime) -> None:
        store = runtime.store
        now = clock.now()

        def read() -> list[QueueInfo]:
            return store.queue_infos(now)

        try:
            infos = await runtime.store_call(read)
        except StoreError as error:
            logger.debug("unserved-Queue check skipped: %s", error)
            return
        for info in unserved_with_due_jobs(infos, serving):
            logger.warning(
                "Queue %r has %s but no Worker Group of this worker (%s) serves "
                "it; they wait until a worker whose Dispatch Policy names %r runs (check the "
                "Queue name, or add it to a group's policy)",
                info.name, counted(info.due, "due job"), names, info.name,
            )

    return duty
