"""How evenly a served sequence follows its weights: overall shares, the worst deviation
from the weights' shares over sliding windows of consecutive completions, and each
Queue's longest gap (the most consecutive services that went to other Queues).

Only the backlogged part of a drain says anything about the selection rule: once one Queue
has run dry the others must take its turns. `backlogged_prefix` cuts a served order where
the first Queue served its last job; the suite analyses that prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True, slots=True)
class Fairness:
    served: int
    shares: dict[str, float]  # Queue -> fraction of all served
    worst_window_deviation: float  # max over windows and Queues of |share - target|
    mean_window_deviation: float  # mean over windows of max |share - target|
    longest_gap: dict[str, int]  # Queue -> most consecutive services to other Queues

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def backlogged_prefix(sequence: Sequence[str]) -> Sequence[str]:
    """The served order up to (and including) the last job of the first Queue to run dry."""
    last: dict[str, int] = {}
    for index, queue in enumerate(sequence):
        last[queue] = index
    return sequence[: min(last.values()) + 1] if last else sequence


def analyse(sequence: Sequence[str], weights: dict[str, int], window: int) -> Fairness:
    total_weight = sum(weights.values())
    target = {q: w / total_weight for q, w in weights.items()}
    n = len(sequence)
    counts = dict.fromkeys(weights, 0)
    for queue in sequence:
        counts[queue] = counts.get(queue, 0) + 1
    shares = {q: counts[q] / n if n else 0.0 for q in weights}

    worst = 0.0
    deviation_sum = 0.0
    windows = 0
    if n >= window:
        in_window = dict.fromkeys(weights, 0)
        for queue in sequence[:window]:
            in_window[queue] += 1
        for start in range(n - window + 1):
            if start:
                in_window[sequence[start - 1]] -= 1
                in_window[sequence[start + window - 1]] += 1
            dev = max(abs(in_window[q] / window - target[q]) for q in weights)
            worst = max(worst, dev)
            deviation_sum += dev
            windows += 1

    last_seen = dict.fromkeys(weights, -1)
    gaps = dict.fromkeys(weights, 0)
    for index, queue in enumerate(sequence):
        gaps[queue] = max(gaps[queue], index - last_seen[queue] - 1)
        last_seen[queue] = index
    return Fairness(n, shares, worst, deviation_sum / windows if windows else 0.0, gaps)
