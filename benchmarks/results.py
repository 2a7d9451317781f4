"""What the suites produce: rows of (suite, subject, metric, Figure), plus free-form detail.

A Figure is one measured quantity over several runs: the median with the min and max.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field


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


@dataclass(frozen=True, slots=True)
class Row:
    suite: str
    subject: str  # "rota[postgres]", "pgqueuer", "raw SQL, 1 connection", ...
    metric: str  # "jobs/s", "rows/s", "p50 ms", ...
    figure: Figure

    def as_json(self) -> dict[str, object]:
        return {"suite": self.suite, "subject": self.subject, "metric": self.metric,
                **self.figure.as_json()}


@dataclass(slots=True)
class SuiteResult:
    rows: list[Row] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # subject -> why
    detail: dict[str, object] = field(default_factory=dict)

    def add(self, suite: str, subject: str, metric: str, figure: Figure) -> None:
        self.rows.append(Row(suite, subject, metric, figure))
