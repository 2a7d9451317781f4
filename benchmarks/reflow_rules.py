"""A model of the Weighted pass (O(Queues) per step, like tests/core/reference_dispatch.py)
with the reflow round's last resort as a parameter: the figures behind docs/dispatch.md,
"The reflow reserve". Not the planner: a sketch to compare rules on.

A round is *tight* when asking every share would leave fewer claims than the rule keeps in
reserve. Rules (all keep a pass within 2 x Queues claims and fill it from due work):

- `old`: reserve one claim per open Queue; a tight round asks the largest share for all
  the room (the planner before 2026-12-01).
- `largest`, `credit`, `slot`: the same reserve; a tight round asks as many Queues as it
  can afford (largest shares / highest credits / first in slot order) for all the room,
  the others taking part unserved (they bank credit).
- `standstill`: like `slot`, but the Queues left unasked leave the steps once their
  claimed jobs are used up (their credit stands still).
- `sweep`: reserve one claim; a tight round is one claim over every open Queue (the
  planner now).

    .venv/bin/python -m benchmarks.reflow_rules
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

OPEN, EMPTY, BLOCKED = "open", "empty", "blocked"
UNLIMITED = 10**9
RULES = ("old", "largest", "credit", "slot", "standstill", "sweep")
Steps = list[tuple[tuple[int, ...], int]]  # (Queues taking part, winner), in slot order


def simulate(
    weights: Sequence[int], credits: Sequence[int], held: Sequence[int],
    supply: Sequence[str], room: int, only: set[int] | None = None,
) -> tuple[Steps, list[int]]:
    """The steps of the pass from `credits` (reference_dispatch._simulate); `only`: the
    Queues that may take new room (None: every OPEN one)."""
    scratch, left, wanted = list(credits), list(held), [0] * len(weights)
    parts = [i for i in range(len(weights)) if not (supply[i] == EMPTY and left[i] == 0)]
    steps: Steps = []
    while parts:
        eligible = [i for i in parts if left[i] > 0 or (
            room > 0 and supply[i] == OPEN and (only is None or i in only))]
        if not eligible:
            break
        winner = max(eligible, key=lambda i: (scratch[i] + weights[i], -i))
        for i in parts:
            scratch[i] += weights[i]
        scratch[winner] -= sum(weights[i] for i in parts)
        steps.append((tuple(parts), winner))
        if left[winner] > 0:
            left[winner] -= 1
            if left[winner] == 0 and supply[winner] == EMPTY:
                parts.remove(winner)
        else:
            wanted[winner] += 1
            room -= 1
    return steps, wanted


class Model:
    def __init__(self, weights: Sequence[int], rule: str) -> None:
        self.weights, self.rule = list(weights), rule
        self.credits = [0] * len(weights)

    def run_pass(self, free: int, due: list[int]) -> list[int]:
        """One pass against `due` (taken as claimed); the Queues served, in slot order."""
        weights, count = self.weights, len(self.weights)
        held, supply, issued, first = [0] * count, [OPEN] * count, 0, True
        planned: Steps | None = None
        while (room := free - sum(held)) > 0 and (budget := 2 * count - issued) > 0:
            steps, wanted = simulate(weights, self.credits, held, supply, room)
            shares = [(i, n) for i, n in enumerate(wanted) if n > 0]
            if not shares:
                break
            planned, asks = steps, shares
            still_open = [i for i in range(count) if supply[i] == OPEN]
            reserve = 1 if self.rule == "sweep" else len(still_open) - 1
            if not first and budget - len(shares) < reserve:
                planned = None
                if self.rule == "sweep":
                    largest = [i for i, _ in sorted(shares, key=lambda s: (-s[1], s[0]))]
                    asks = [(i, room) for i in largest + [
                        i for i in still_open if i not in largest]]
                elif self.rule == "old":
                    asks = [(max(shares, key=lambda s: (s[1], -s[0]))[0], room)]
                else:
                    asks, supply = self._tight(shares, steps, held, supply, room, budget)
            first = False
            sweep_left = room
            for index, limit in asks:  # a sweep's asks: each Queue for the room left
                limit = min(limit, sweep_left) if self.rule == "sweep" else limit
                got = min(limit, due[index])
                due[index] -= got
                held[index] += got
                if got < limit:
                    supply[index], planned = EMPTY, None
                sweep_left -= got
                if self.rule == "sweep" and len(asks) > 1 and sweep_left == 0:
                    break
            issued += 1 if self.rule == "sweep" and len(asks) > 1 else len(asks)
        if planned is None:
            final = [BLOCKED if s == OPEN else s for s in supply]
            planned, _ = simulate(weights, self.credits, held, final, 0)
        for parts, winner in planned:
            for i in parts:
                self.credits[i] += weights[i]
            self.credits[winner] -= sum(weights[i] for i in parts)
        return [winner for _, winner in planned]

    def _tight(
        self, shares: list[tuple[int, int]], steps: Steps, held: list[int],
        supply: list[str], room: int, budget: int,
    ) -> tuple[list[tuple[int, int]], list[str]]:
        still_open = sum(1 for s in supply if s == OPEN)
        affordable = budget - still_open + 1
        if self.rule == "largest":
            order = [i for i, _ in sorted(shares, key=lambda s: (-s[1], s[0]))]
        elif self.rule == "credit":
            order = sorted((i for i, _ in shares), key=lambda i: (-self.credits[i], i))
        else:  # slot, standstill: first new wins in slot order
            order, left = [], list(held)
            for _, winner in steps:
                if left[winner] > 0:
                    left[winner] -= 1
                elif winner not in order:
                    order.append(winner)
        chosen = set(order[:affordable])
        if self.rule == "standstill":
            supply = [EMPTY if s == OPEN and i not in chosen else s
                      for i, s in enumerate(supply)]
            chosen = set()
        _, wanted = simulate(self.weights, self.credits, held, supply, room, chosen or None)
        return [(i, n) for i, n in enumerate(wanted) if n > 0], supply


def drive(model: Model, due: list[int], pool: int, jobs: int) -> list[int]:
    served: list[int] = []
    while len(served) < jobs:
        got = model.run_pass(min(pool, jobs - len(served)), due)
        if not got:
            break
        served.extend(got)
    return served


def main() -> int:
    weights, idle = [6, 6, 6, 18], 3
    print("6:6:6:18, the 18 idle, pool 59: credits after one pass, after 4 more jobs, and "
          "the idle Queue's turns in its next window of 36 (bound 19)")
    for rule in RULES:
        model = Model(weights, rule)
        due = [UNLIMITED] * 4
        due[idle] = 0
        model.run_pass(59, due)
        after_one = list(model.credits)
        model.run_pass(4, due)
        due[idle] = UNLIMITED
        turns = drive(model, due, 59, 36).count(idle)
        print(f"  {rule:10} {after_one} -> {turns}")
    weights, idle = [4, 1, 1, 1], 0
    print("4:1:1:1, the 4 idle, pool 13, 3000 jobs: served b/c/d (1:1:1 is 1000 each), and "
          "the largest |credit| / total weight at a pass end")
    for rule in RULES:
        model = Model(weights, rule)
        due = [0, UNLIMITED, UNLIMITED, UNLIMITED]
        served: list[int] = []
        spread = 0.0
        while len(served) < 3000:
            served += model.run_pass(13, due)
            spread = max(spread, max(map(abs, model.credits)) / sum(weights))
        counts = [served[:3000].count(i) for i in (1, 2, 3)]
        print(f"  {rule:10} {counts}  {spread:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
