"""Switching a running Worker Group to another Dispatch Policy, between two of its passes.

A group whose policy is changed while it runs (`App.set_group_policy`) keeps its
dispatcher's knowledge where the two policies share Queues:

- a Queue in both policies keeps its credit, and stays out of the steps if the group
  held it for empty; a kept credit outside the new policy's range, minus to plus the new
  weight-sum (the policy lost weight), is clamped to that range: a credit far below it
  would otherwise let a Queue new to the policy win dozens of turns in a row. Within the
  range (always when the weights are the same, or the policy gains weight) the credit is
  kept exactly, so a switch to the same policy changes no claim;
- a Queue new to the policy starts at credit 0 and takes part, as a Queue returning from
  idle does: its catch-up stays bounded (one turn over its weight in the next weight-sum
  window);
- a dropped Queue's credit goes with it (its leased jobs finish: they are not the
  dispatcher's).

Strict keeps no credits: a switch to or from Strict starts Weighted credits at 0.
The pass the old dispatcher planned last must be over (every job served or skipped); the
switch finishes it, as its next pass would have.

Pure: no I/O, no clock, no asyncio, no randomness.
"""

from __future__ import annotations

from rota.core.dispatch.plan import Dispatcher
from rota.core.dispatch.strict import StrictDispatcher
from rota.core.dispatch.swrr import Credits
from rota.core.dispatch.weighted import WeightedDispatcher
from rota.core.policy import DispatchPolicy, Strict, Weighted


def switch(dispatcher: Dispatcher, policy: DispatchPolicy, *,
           remember_empty: bool = False, validate: bool = True,
           joined: bool = False) -> Dispatcher:
    """The dispatcher for `policy`, after validating it, carrying over what `dispatcher`
    (the one running) knows of the Queues the two policies share (module docstring).

    `validate=False`: `policy` expands one already validated (rota.core.dispatch.members),
    and may serve no Queue yet. `joined`: `policy` is the running one with members of its
    families added; what the group knows of the Queues it holds for empty carries over
    whole (no new survey), and the new members take part.

    Raises:
        ValueError: if the policy's values are invalid (see `DispatchPolicy.validate`);
            `dispatcher` is left as it was.
    """
    if validate:
        policy.validate()
    if isinstance(policy, Strict):
        return StrictDispatcher(policy)
    if not isinstance(policy, Weighted):
        raise TypeError(f"unknown dispatch policy {policy!r}")  # pragma: no cover
    switched = WeightedDispatcher(policy, remember_empty=remember_empty)
    if isinstance(dispatcher, WeightedDispatcher):
        _carry_over(dispatcher, switched)
        if joined and dispatcher.memory is not None and switched.memory is not None:
            switched.memory.carry_over(dispatcher.memory)
    return switched


def _carry_over(old: WeightedDispatcher, new: WeightedDispatcher) -> None:
    old.finish_pass()
    bound = sum(new.weights)
    credits = [0] * len(new.queues)
    out: list[int] = []
    for index, queue in enumerate(new.queues):
        before = old.index.get(queue)
        if before is None:
            continue
        credits[index] = max(-bound, min(bound, old.state.credit(before)))
        if before in old.state.out:
            out.append(index)
    new.state = Credits.resumed(new.weights, credits, out)
    if old.probe_pending and new.memory is not None:
        new.memory.note_work()
