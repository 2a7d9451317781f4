"""What the suites produce: rows of (suite, subject, metric, Figure), plus free-form detail."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.stats import Figure


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
