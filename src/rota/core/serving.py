"""Which Queues a worker serves, and which Queues with due work nobody serves.

A job enqueued on a Queue that no Worker Group serves waits silently. These decisions say
so: the worker warns at start (`rota.worker.unserved`) and `rota queues --app` marks such
Queues. Today "served" means served by the groups of one App (the worker's own, or the
App given to `rota queues --app`); the worker registry will refine it to "served by any
live worker on the store".

Pure: takes Queue infos and policies, returns decisions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rota.core.groups import WorkerGroupOptions
from rota.core.queue_controls import QueueInfo


def served_by(groups: Iterable[WorkerGroupOptions]) -> dict[str, tuple[str, ...]]:
    """Queue name -> the names of the groups whose Dispatch Policy serves it, in order."""
    serving: dict[str, list[str]] = {}
    for options in groups:
        for queue in options.policy.queues:
            serving.setdefault(queue, []).append(options.name)
    return {queue: tuple(names) for queue, names in serving.items()}


def unserved_with_due_jobs(
    infos: Iterable[QueueInfo], serving: Mapping[str, object]
) -> list[QueueInfo]:
    """The Queues that have jobs due now and that no group in `serving` serves, sorted by
    name. A paused Queue counts too: it is unserved either way, but the warning should
    not hide it."""
    return sorted(
        (info for info in infos if info.due > 0 and info.name not in serving),
        key=lambda info: info.name,
    )
