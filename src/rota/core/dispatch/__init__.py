"""Dispatch planning: which Queues a pass claims from, how many jobs each, in what order.

A Worker Group owns one dispatcher for its life (`for_policy`). Each pass asks
it for a `PassPlan` sized to the group's free capacity, drives the plan's claims against
the store (`PassPlan` says how), then dispatches the claimed jobs in the plan's slot order,
charging the dispatcher one step per job served.

- `strict`: one claim over the ordered Queues, sized to the free capacity.
- `weighted`: smooth weighted round-robin over the Queues taking part (`swrr`), one claim
  per Queue sized by simulating the free slots, reflow within at most 2 x (served Queues)
  claims, charge on issue; and what a group remembers of Queues found empty (`memory`).
- `switch`: a running group's dispatcher carried over to a new policy between passes.
- `members`: the Queues a policy that names families serves now (`Membership`).

Pure: no I/O, no clock, no asyncio, no randomness.
"""

from __future__ import annotations

from rota.core.dispatch.members import Membership
from rota.core.dispatch.plan import ClaimRequest, Dispatcher, PassPlan, RoundTrip
from rota.core.dispatch.strict import StrictDispatcher
from rota.core.dispatch.switch import switch
from rota.core.dispatch.weighted import WeightedDispatcher
from rota.core.policy import DispatchPolicy, Strict, Weighted

__all__ = [
    "ClaimRequest",
    "Dispatcher",
    "Membership",
    "PassPlan",
    "RoundTrip",
    "StrictDispatcher",
    "WeightedDispatcher",
    "for_policy",
    "switch",
]


def for_policy(policy: DispatchPolicy, *, remember_empty: bool = False,
               validate: bool = True) -> Dispatcher:
    """The dispatcher for `policy`, after validating it (`remember_empty`: see
    `rota.core.dispatch.memory`; Strict keeps no state, so it ignores it). `validate=False`
    for the expansion of a validated policy (rota.core.dispatch.members), which may serve
    no Queue yet.

    Raises:
        ValueError: if the policy's values are invalid (see `DispatchPolicy.validate`).
    """
    if validate:
        policy.validate()
    if isinstance(policy, Strict):
        return StrictDispatcher(policy)
    if isinstance(policy, Weighted):
        return WeightedDispatcher(policy, remember_empty=remember_empty)
    raise TypeError(f"unknown dispatch policy {policy!r}")  # pragma: no cover
