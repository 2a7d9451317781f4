"""bulk enqueue: rows/s through each library's fastest documented bulk API, in calls of
`enqueue_chunk` jobs (rota: `job.enqueue_many`; procrastinate: `batch_defer_async`;
pgqueuer: `Queries.enqueue` with lists). With --suite all these rows come from the drain
suite's enqueue phase instead (the same API, the same count), to save time."""

from __future__ import annotations

from benchmarks.results import Figure, SuiteResult
from benchmarks.settings import Settings
from benchmarks.targets import Target, available


def run(targets: list[Target], settings: Settings, done: frozenset[str] = frozenset()
        ) -> SuiteResult:
    """Measure every target not in `done` (subjects whose rows the drain suite gave)."""
    result = SuiteResult()
    count = settings.enqueue_jobs
    for target in available([t for t in targets if t.name not in done], "enqueue", result,
                            needs_worker=False):
        rates: list[float] = []
        for run_index in range(settings.runs):
            target.prepare()
            try:
                seconds = target.enqueue_noops(count, settings.enqueue_chunk)
            finally:
                target.discard()
            rates.append(count / seconds)
            print(f"  enqueue {target.name} run {run_index + 1}: {count / seconds:,.0f} rows/s",
                  flush=True)
        result.add("enqueue", target.name, "rows/s", Figure.of(
            rates, "rows/s", f"{count:,} rows, {settings.enqueue_chunk:,} per call"))
    return result
