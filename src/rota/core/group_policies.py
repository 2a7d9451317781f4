"""Worker Group policies stored cluster-wide, and how they are checked and read back.

`App.set_group_policy` stores a group's Dispatch Policy in the store, where every worker
running the group finds it; `StoredPolicy` is such a row as a store returns it. A row
carries a version that moves on with every change (a clear included), so a worker
learns that a policy changed from `group_policy_versions`, a few integers, and reads the
row itself only then.

`checked_policy` is the one check of a policy on its way in: the same errors as a group's
start (rota.core.policy, decision 0002), the group named in the cause. `StoredPolicy.policy`
is the one way back: a row a worker cannot use (written by a newer rota, or by hand)
raises there, and the worker keeps the policy it runs. `check_known_group` is the rule
that refuses a policy for a group nobody defines or runs (a typo), unless forced.

Pure: imports the core only.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from rota.core.groups import validate_group_name
from rota.core.policy import DispatchPolicy, PolicyFault, name_in_fault
from rota.core.workers import policy_from_parts, policy_parts


@dataclass(frozen=True, slots=True)
class StoredPolicy:
    """A group's stored policy as the store holds it.

    Attributes:
        group: the Worker Group's name.
        kind: "strict" or "weighted" (another kind: written by a rota this one predates).
        queues: the Queues in declaration order.
        weights: one per Queue for Weighted; None for Strict.
        version: moves on with every change of the group's row, a clear included.
        updated_at: when it was set (the setter's clock).
    """

    group: str
    kind: str
    queues: tuple[str, ...]
    weights: tuple[int, ...] | None
    version: int
    updated_at: datetime

    def policy(self) -> DispatchPolicy:
        """The policy, checked as a group's start checks it.

        Raises:
            ValueError: if a worker cannot use it (an unknown kind, weights that do not
                match the Queues, or a value the start-up check refuses); the message
                names the group and the version.
        """
        try:
            return checked_policy(self.group, policy_from_parts(
                self.kind, self.queues, self.weights))
        except (TypeError, ValueError) as error:
            cause = error.__cause__
            detail = f"{error} ({cause})" if isinstance(cause, PolicyFault) else str(error)
            raise ValueError(
                f"the stored policy of Worker Group {self.group!r} (version "
                f"{self.version}) cannot be used: {detail}") from error


def checked_policy(group: str, policy: object) -> DispatchPolicy:
    """`policy` for Worker Group `group`, checked with the errors of a group's start.

    Raises:
        TypeError: if `policy` is not a DispatchPolicy, or `group` not a str.
        ValueError: the start-up error of an invalid policy (its exact message; what is at
            fault, and the group, in its cause), or an invalid group name.
    """
    validate_group_name(group)
    if not isinstance(policy, DispatchPolicy):
        raise TypeError(
            "a group policy must be a DispatchPolicy (rota.Strict(...) or "
            f"rota.Weighted([...])), or None for the policy in the code; got {policy!r}")
    try:
        policy.validate()
    except ValueError as error:
        name_in_fault(error, f"for Worker Group {group!r}")
        raise
    return policy


# Known groups named in the refusal of an unknown one before the rest are counted.
SHOWN_GROUPS = 20


def check_known_group(group: str, known: Collection[str], how_to_force: str) -> None:
    """Refuse a policy for `group` unless it is in `known` (the groups an App defines, a
    worker registered, or that have a stored policy): a mistyped name would otherwise be
    stored and serve nothing, silently. `how_to_force` is the caller's way past it
    (`force=True`, `--force`), for a group whose workers have not started yet.

    Raises:
        ValueError: naming the known groups (sorted) and the way to force.
    """
    if group in known:
        return
    names = sorted(known)
    shown = [repr(name) for name in names[:SHOWN_GROUPS]]
    if len(names) > SHOWN_GROUPS:
        shown.append(f"... ({len(names) - SHOWN_GROUPS} more)")
    listed = f"known groups: {', '.join(shown)}" if names else \
        "no Worker Group is known yet on this store"
    raise ValueError(
        f"Worker Group {group!r} is not known here: no App here defines it and no worker "
        f"registered it ({listed}); check the name, or use {how_to_force} to store a "
        "policy for a group whose workers have not started yet")


def policy_columns(policy: DispatchPolicy) -> dict[str, object]:
    """A policy as the stores' columns: kind, and the Queues and weights as JSON text
    (one row however many Queues: 10,000 is an ordinary tenant fleet)."""
    kind, queues, weights = policy_parts(policy)
    return {"kind": kind, "queues": json.dumps(list(queues)),
            "weights": None if weights is None else json.dumps(list(weights))}


def stored_policy(group: str, kind: str, queues: str, weights: str | None, version: int,
                  updated_at: datetime) -> StoredPolicy:
    """The `StoredPolicy` of a row's columns (the inverse of `policy_columns`). A row whose
    JSON does not parse keeps what it can: `policy()` then says why it cannot be used."""
    try:
        names = json.loads(queues)
        numbers = None if weights is None else json.loads(weights)
    except ValueError:
        names, numbers = [], None
        kind = f"unreadable {kind}"
    return StoredPolicy(
        group, kind, tuple(names) if isinstance(names, list) else (),
        tuple(numbers) if isinstance(numbers, list) else None, version, updated_at)
