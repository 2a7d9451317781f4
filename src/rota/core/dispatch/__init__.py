"""Dispatch planning: which Queues a pass claims from, how many jobs each, in what order.

A Worker Group owns one dispatcher for its life (`Dispatcher.for_policy`). Each pass asks
it for a `PassPlan` sized to the group's free capacity, drives the plan's claims against
the store (`PassPlan` says how), then dispatches the claimed jobs in the plan's slot order,
charging the dispatcher one step per job served.

- `strict`: one claim over the ordered Queues, sized to the free capacity.
- `weighted`: smooth weighted round-robin over the Queues taking part (`swrr`), one claim
  per Queue sized by simulating the free slots, reflow within at most 2 x (served Queues)
  claims, charge on issue; and what a group remembers of Queues found empty (`memory`).

Pure: no I/O, no clock, no asyncio, no randomness.
"""

from __future__ import annotations

from rota.core.dispatch.plan import ClaimRequest, Dispatcher, PassPlan, RoundTrip
from rota.core.dispatch.strict import StrictDispatcher
from rota.core.dispatch.weighted import WeightedDispatcher

__all__ = [
    "ClaimRequest",
    "Dispatcher",
    "PassPlan",
    "RoundTrip",
    "StrictDispatcher",
    "WeightedDispatcher",
]
