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

from rota.core.families import family_prefix, is_family
from rota.core.groups import WorkerGroupOptions
from rota.core.queue_controls import QueueInfo


def served_by(groups: Iterable[WorkerGroupOptions]) -> dict[str, tuple[str, ...]]:
    """Policy entry (a Queue name, or a family: rota.core.families) -> the names of the
    groups whose Dispatch Policy names it, in order."""
    serving: dict[str, list[str]] = {}
    for options in groups:
        for queue in options.policy.queues:
            serving.setdefault(queue, []).append(options.name)
    return {queue: tuple(names) for queue, names in serving.items()}


def groups_serving(serving: Mapping[str, tuple[str, ...]], queue: str) -> tuple[str, ...]:
    """The groups of `serving` (from `served_by`) that serve `queue`: those naming it, and
    those with a family that holds it, each once, in order."""
    found = list(serving.get(queue, ()))
    for entry, groups in serving.items():
        if is_family(entry) and queue.startswith(family_prefix(entry)):
            found.extend(group for group in groups if group not in found)
    return tuple(found)


def unserved_with_due_jobs(
    infos: Iterable[QueueInfo], serving: Mapping[str, tuple[str, ...]]
) -> list[QueueInfo]:
    """The Queues that have jobs due now and that no entry of `serving` (a Queue name, or
    a family that holds it) serves, sorted by name. A paused Queue counts too: it is
    unserved either way, but the warning should not hide it."""
    return sorted(
        (info for info in infos if info.due > 0 and not groups_serving(serving, info.name)),
        key=lambda info: info.name,
    )
