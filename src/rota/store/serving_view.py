"""The policies in force, read from a store: who serves what now (rota.core.serving).

`stored_policies` reads every stored group policy (the versions, then the row of each
group that has one); `policies_in_force` adds the registry's live workers and answers the
policy in force of every group they run. Every tool that says who serves a Queue reads
them here and asks `rota.core.serving.serving_groups`.

Reads only the store contract.
"""

from __future__ import annotations

from datetime import datetime

from rota.core.group_policies import StoredPolicy
from rota.core.serving import PolicyInForce, live_policies
from rota.store.base import Store


def stored_policies(store: Store) -> dict[str, StoredPolicy]:
    """Every group's stored policy, by group (a cleared one is left out). One small read
    of the versions, then one row per group that ever had a stored policy."""
    found: dict[str, StoredPolicy] = {}
    for group in sorted(store.group_policy_versions()):
        row = store.group_policy(group)
        if row is not None:
            found[group] = row
    return found


def policies_in_force(store: Store, now: datetime) -> dict[str, PolicyInForce]:
    """The policy in force of every group a live worker runs at `now`, by group."""
    return live_policies(store.list_workers(now), stored_policies(store))
