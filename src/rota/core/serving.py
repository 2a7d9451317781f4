"""Who serves a Queue now: the one answer every tool gives (`rota queues`, `rota workers`,
`rota health --app`, the dashboard's "served by", its start estimates and its metrics, and
the worker's warning about unserved Queues).

Theory of operation: a Queue is served by the Worker Groups that live workers run, each
under its **policy in force**: the policy stored for the group (`App.set_group_policy`,
`rota policy`, the dashboard), when a worker can use it, else the one in the code, as the
group's workers registered it. Workers follow a stored policy within about a second of
its change (rota.worker.policies), so the stored one is what they run.

- `entry_for(policy, queue)`: the one place a Queue is matched against a policy's entries
  (a Queue name, or a family: rota.core.families), answering the entry's name and its
  weight, None under Strict.
- `serving_groups(queue, policies)`: per group serving `queue`, its weight. Every tool asks
  this, with the policies of `live_policies` (or `in_force` for one group); a tool asking
  for many Queues indexes the policies once (`ServingIndex`).
- `live_policies(workers, stored)`: the policies in force of the groups live workers run,
  from the registry's rows and the stored policies.
- `unserved_with_due_jobs(infos, policies)`: the Queues with due jobs nobody serves.
- `groups_in_force`, `workers_in_force`, `fairness_in_force`: the registry's rows and the
  fairness view with the policies in force in place of the code's.

Pure: takes the registry's rows, the stored rows and Queue infos as values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from rota.core.families import PolicyEntries
from rota.core.group_policies import StoredPolicy
from rota.core.policy import DispatchPolicy, Weighted
from rota.core.queue_controls import QueueInfo
from rota.core.workers import (
    GroupFairness,
    ServedCount,
    WorkerGroupInfo,
    WorkerInfo,
    fairness,
    minute_of,
)


@dataclass(frozen=True, slots=True)
class PolicyInForce:
    """A group's policy in force and where it comes from: `stored` (the row, which a
    worker can use) or the code (`stored` None). `unusable` says why a stored row is not
    in force, when there is one a worker cannot use."""

    policy: DispatchPolicy
    stored: StoredPolicy | None
    unusable: str | None = None


def in_force(code: DispatchPolicy | None, row: StoredPolicy | None) -> PolicyInForce | None:
    """The policy in force of a group whose code has `code` (None: unknown) and whose
    stored row is `row` (None: none stored): the row if a worker can use it, else the
    code's; None when neither is known."""
    unusable = None
    if row is not None:
        try:
            return PolicyInForce(row.policy(), row)
        except ValueError as error:
            unusable = str(error)
    if code is None:
        return None
    return PolicyInForce(code, None, unusable)


def _entry(policy: DispatchPolicy, entries: PolicyEntries,
           queue: str) -> tuple[str, int | None] | None:
    index = entries.entry_of(queue)
    if index is None:
        return None
    weight = policy.weights[index][1] if isinstance(policy, Weighted) else None
    return policy.queues[index], weight


def entry_for(policy: DispatchPolicy, queue: str) -> tuple[str, int | None] | None:
    """The entry of `policy` that serves `queue`: (its name, a Queue or a family
    (rota.core.families); its weight, None under Strict), or None if no entry serves the
    Queue. The one match of a Queue against a policy (for many Queues, `ServingIndex`
    indexes the policy once)."""
    return _entry(policy, PolicyEntries(policy.queues), queue)


class ServingIndex:
    """Policies in force (group -> policy), indexed once for `groups(queue)`: a dict
    lookup and a look at each family prefix per group, however many Queues a policy
    names (a tool asking for 10,000 tenant Queues must not scan 10,000 entries each)."""

    def __init__(self, policies: Mapping[str, DispatchPolicy]) -> None:
        self._policies = [(group, policy, PolicyEntries(policy.queues))
                          for group, policy in policies.items()]

    def groups(self, queue: str) -> dict[str, int | None]:
        """Group -> its weight for `queue` (None under Strict), for each group serving it,
        in the policies' order."""
        serving: dict[str, int | None] = {}
        for group, policy, entries in self._policies:
            entry = _entry(policy, entries, queue)
            if entry is not None:
                serving[group] = entry[1]
        return serving


def serving_groups(
    queue: str, policies: Mapping[str, DispatchPolicy] | ServingIndex
) -> dict[str, int | None]:
    """Group -> its weight for `queue` (None under Strict), for each group of `policies`
    (group -> policy in force, or a `ServingIndex` of them) whose policy serves `queue`
    (by name, or by a family holding it), in the policies' order. The one answer to "which
    groups serve this Queue, with which weight, now"."""
    index = policies if isinstance(policies, ServingIndex) else ServingIndex(policies)
    return index.groups(queue)


def live_policies(
    workers: Iterable[WorkerInfo], stored: Mapping[str, StoredPolicy]
) -> dict[str, PolicyInForce]:
    """The policy in force of every group a live worker runs, by group name (sorted):
    its stored row (`stored`, by group) when a worker can use it, else the code's as its
    workers registered it (the latest-started live worker's, should two differ during a
    deploy)."""
    code: dict[str, DispatchPolicy] = {}
    for worker in sorted((w for w in workers if w.alive), key=lambda w: w.started_at):
        for group in worker.groups:
            code[group.name] = group.policy
    found: dict[str, PolicyInForce] = {}
    for name in sorted(code):
        policy = in_force(code[name], stored.get(name))
        if policy is not None:
            found[name] = policy
    return found


def policies_of(found: Mapping[str, PolicyInForce]) -> dict[str, DispatchPolicy]:
    """Group -> policy, the shape `serving_groups` takes."""
    return {group: one.policy for group, one in found.items()}


def unserved_with_due_jobs(
    infos: Iterable[QueueInfo], policies: Mapping[str, DispatchPolicy]
) -> list[QueueInfo]:
    """The Queues that have jobs due now and that no group of `policies` serves, sorted by
    name. A paused Queue counts too: it is unserved either way, but the warning should
    not hide it. A family's entry (`QueueInfo.members`) is no Queue: its members are
    looked at one by one."""
    index = ServingIndex(policies)
    return sorted(
        (info for info in infos
         if info.members is None and info.due > 0 and not index.groups(info.name)),
        key=lambda info: info.name,
    )


def groups_in_force(
    groups: Iterable[WorkerGroupInfo], stored: Mapping[str, StoredPolicy]
) -> list[WorkerGroupInfo]:
    """`groups` (as registered) with the policy in force in place of the code's."""
    found = []
    for group in groups:
        policy = in_force(group.policy, stored.get(group.name))
        found.append(group if policy is None or policy.policy == group.policy
                     else replace(group, policy=policy.policy))
    return found


def workers_in_force(
    workers: Iterable[WorkerInfo], stored: Mapping[str, StoredPolicy]
) -> list[WorkerInfo]:
    """The registry's rows with each group's policy in force in place of the code's
    (`rota workers`, the dashboard's worker list)."""
    return [replace(worker, groups=tuple(groups_in_force(worker.groups, stored)))
            for worker in workers]


def fairness_in_force(
    groups: Iterable[WorkerGroupInfo], workers: Iterable[WorkerInfo],
    served: Iterable[ServedCount], since: datetime, stored: Mapping[str, StoredPolicy],
) -> list[GroupFairness]:
    """`rota.core.workers.fairness` against the policies in force: a group whose stored
    policy was set after `since` is compared from the minute of that change on (the
    history is per whole minute: that minute may hold a few jobs served under the policy
    before), and says when it changed (`policy_changed_at`)."""
    changed = {name: row.updated_at for name, row in stored.items()
               if row.updated_at > since and in_force(None, row) is not None}
    kept = [count for count in served
            if count.group not in changed or count.minute is None
            or count.minute >= minute_of(changed[count.group])]
    views = fairness(groups_in_force(groups, stored), workers_in_force(workers, stored),
                     kept, since)
    return [replace(view, since=minute_of(changed[view.group]),
                    policy_changed_at=changed[view.group])
            if view.group in changed else view for view in views]
