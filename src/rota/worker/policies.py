"""The policy duty: running groups follow the policies stored for them while they run.

Theory of operation: `App.set_group_policy` writes a group's policy into the store, with
a version that moves on at each change (`GroupPolicyStore`). A worker learns of a change
by reading the versions, a few integers, every `POLL_S` (a second), and reads a group's
row only when its version moved. It hands the row to the group's runner
(`GroupRunner.offer_policy`), which switches at its next pass; a pass never reads the
store for this, so it costs one attribute read more, however often policies change.
(The App that sets a policy hands it to its own runners at once: rota.app.groups.)

`follow_stored_policies` is the one look, shared by the duty and by a drive that starts
(`run_until_idle`, which runs no duties, looks once per call).

State lives on the object (the supervisor may restart `__call__`). Imports the core, the
store contract and the duty protocol.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from rota.store.base import Store, StoreError
from rota.worker.duty import DutyRuntime
from rota.worker.group import GroupRunner

logger = logging.getLogger("rota")

# How often a worker reads the stored versions: a change made elsewhere reaches it within
# this, for one small read a second (docs/decisions/0058).
POLL_S: Final = 1.0


def follow_stored_policies(store: Store, runners: Sequence[GroupRunner]) -> list[GroupRunner]:
    """Offer each runner its group's stored policy if its version moved since the runner
    last acted on it; return the runners offered one. Blocking (a store thread)."""
    if not runners:
        return []
    versions = store.group_policy_versions()
    offered: list[GroupRunner] = []
    for runner in runners:
        version = versions.get(runner.name, 0)
        if version > runner.policy_version:
            runner.offer_policy(version, store.group_policy(runner.name))
            offered.append(runner)
    return offered


class PolicyDuty:
    """Follows the stored policies of the runtime's groups (see the module docstring)."""

    def __init__(self) -> None:
        self._failing = False

    async def __call__(self, runtime: DutyRuntime) -> None:
        runners = [group.runner for group in runtime.groups]
        while True:
            try:
                offered = await runtime.store_call(follow_stored_policies, runtime.store,
                                                   runners)
            except StoreError as error:
                if not self._failing:
                    logger.warning("group policies: reading the stored policies failed "
                                   "(retrying every %.3g s): %s", POLL_S, error)
                self._failing = True
            else:
                if self._failing:
                    logger.info("group policies: reading the stored policies works again")
                self._failing = False
                if offered:
                    runtime.policies_offered()
            await runtime.sleep_unless_stopping(POLL_S)
            if runtime.stopping:
                return
