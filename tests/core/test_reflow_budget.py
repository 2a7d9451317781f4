"""Reflow continues past two rounds (within 2 x Queues claims): no Queue starves."""

from __future__ import annotations

from rota.core.dispatch import for_policy
from rota.core.policy import Weighted


def test_one_free_slot_behind_two_empty_queues_still_reaches_the_third() -> None:
    # Given a 6:3:1 group with one free slot, whose Queues a and b are empty
    dispatcher = for_policy(Weighted([("a", 6), ("b", 3), ("c", 1)]))
    backlog = {"a": 0, "b": 0, "c": 5}
    for _ in range(3):
        plan = dispatcher.begin_pass(1)
        claims: list[str] = []
        # When the pass is driven
        while requests := plan.next_claims():
            for request in requests:
                queue = request.queues[0]
                claims.append(queue)
                taken = min(request.limit, backlog[queue])
                backlog[queue] -= taken
                plan.claimed(request, [queue] * taken)
        served = plan.dispatch_order()
        for _ in served:
            plan.serve()
        # Then it reflows past a and b to c, within 2 x 3 claims
        assert served == ["c"]
        assert len(claims) <= 6
    assert backlog["c"] == 2
