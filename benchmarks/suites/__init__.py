"""The suites of `python -m benchmarks run`: drain, enqueue, latency, ceiling, weights,
memory, pickup, and (run only when named) fairness, queues, scale, dashboard, schedules,
maintenance, soak, families. Each prints progress as it goes and returns a SuiteResult;
none asserts a timing. `runner(name)` gives each the same call."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchmarks.results import SuiteResult
    from benchmarks.settings import Settings
    from benchmarks.targets import Target

Runner = Callable[["list[Target]", "Settings", "dict[str, SuiteResult]"], "SuiteResult"]


def runner(name: str) -> Runner:
    """The suite `name` as runner(targets, settings, results of the suites run before)."""
    suite = importlib.import_module(f"benchmarks.suites.{name}")
    if name in ("drain", "latency"):
        return lambda targets, settings, _done: suite.run(targets, settings)
    if name == "enqueue":
        def enqueue_rest(targets: list[Target], settings: Settings,
                         done: dict[str, SuiteResult]) -> SuiteResult:
            # Subjects the drain suite measured already have their enqueue rows.
            drained = done.get("drain")
            measured = frozenset(r.subject for r in drained.rows if r.suite == "enqueue"
                                 ) if drained else frozenset()
            return suite.run(targets, settings, measured)

        return enqueue_rest
    if name == "scale":
        return lambda _targets, settings, _done: suite.run(settings, settings.scale_rows)
    return lambda _targets, settings, _done: suite.run(settings)
