"""Figures: the median of several runs with their min and max, and latency percentiles."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured quantity over several runs: median, min, max, and every run's value."""

    unit: str
    median: float
    min: float
    max: float
    runs: tuple[float, ...]
    note: str = ""

    @classmethod
    def of(cls, values: Sequence[float], unit: str, note: str = "") -> Figure:
        if not values:
            raise ValueError("a Figure needs at least one value")
        return cls(unit, statistics.median(values), min(values), max(values), tuple(values),
                   note)

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values (fraction in [0, 1])."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]
