"""Worker Group policies changed while workers run: what `App.set_group_policy` and
`App.group_policy` do, and what the `rota policy` command and the dashboard share.

A policy set here is stored (`GroupPolicyStore`); every worker running the group follows
it at its next pass (rota.worker.policies), this App's own runners at once. The policy
in force is the stored one a worker can use, else the one in the code.
Imports the core, the store contract and the App's groups.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from rota.app_groups import WorkerGroups
from rota.core.group_policies import StoredPolicy, check_known_group
from rota.core.groups import validate_group_name
from rota.core.policy import DispatchPolicy
from rota.core.workers import policy_parts
from rota.store.base import Store


def set_group_policy(store: Store, groups: WorkerGroups, group: str,
                     policy: DispatchPolicy | None, now: datetime, *,
                     force: bool = False) -> int:
    """Store `group`'s policy (None: clear it) and hand it to this App's runner of the
    group; the stored version. A group nobody knows is refused unless `force`."""
    validate_group_name(group)
    if not force:
        check_group_known(store, [o.name for o in groups.options], group, "force=True")
    version = store.set_group_policy(group, policy, now)  # checks it, as a start does
    row = None if policy is None else StoredPolicy(group, *policy_parts(policy), version, now)
    groups.policy_set(group, version, row)
    return version


def check_group_known(store: Store, defined: Iterable[str], group: str,
                      how_to_force: str) -> None:
    """Refuse `group` unless an App here defines it (`defined`), a worker registered it,
    or a policy is stored for it (set with force before its workers started: changing or
    clearing it needs no force again). Reads the registry and the group's one row only.

    Raises:
        ValueError: naming the known groups and `how_to_force`.
    """
    known = {*defined, *(info.name for info in store.worker_groups())}
    if group not in known and store.group_policy(group) is not None:
        return
    check_known_group(group, known, how_to_force)


@dataclass(frozen=True, slots=True)
class PolicyInForce:
    """A group's policy in force and where it comes from: `stored` (the row, which a
    worker can use) or the code (`stored` None). `unusable` says why a stored row is not
    in force, when there is one a worker cannot use."""

    policy: DispatchPolicy
    stored: StoredPolicy | None
    unusable: str | None = None


def policy_in_force(store: Store, code: DispatchPolicy | None, group: str) -> PolicyInForce:
    """`group`'s policy in force: stored, else `code` (the App's; None if it defines no
    such group).

    Raises:
        ValueError: if neither exists (the message says how to set one), or the group
            name is invalid.
    """
    validate_group_name(group)
    row = store.group_policy(group)
    unusable = None
    if row is not None:
        try:
            return PolicyInForce(row.policy(), row)
        except ValueError as error:
            unusable = str(error)
    if code is not None:
        return PolicyInForce(code, None, unusable)
    raise ValueError(
        unusable or f"no policy is stored for Worker Group {group!r}, and no App defines "
        "it here; store one with app.set_group_policy(group, policy) or "
        f"`rota policy {group} --weighted a=5,b=1`")
