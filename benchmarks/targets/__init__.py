"""The libraries measured, one adapter each (`rota_target`, `peers`), and what every one
provides to the suites.

A Target owns one fresh database (or SQLite file) per measured run: `prepare()` creates it
and installs the library's schema as its documentation says, `discard()` drops it. Workers
run as subprocesses (`worker_argv`), so each library is measured in its own process with
its own event loop, exactly as a user would deploy it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from benchmarks.results import SuiteResult

# Job kinds a worker module registers: "noop" (drain, enqueue) and "probe" (latency: the
# handler writes now - payload timestamp to the file named by BENCH_LATENCY_FILE).
NOOP = "noop"
PROBE = "probe"


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """How to start one worker process of a target."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


class Target(Protocol):
    """A library under test, bound to one database for the current run."""

    name: str
    # What the worker's concurrency setting is called and is set to, for the report.
    concurrency_note: str

    def unavailable(self, needs_worker: bool = True) -> str | None:
        """Why this target cannot run here (None if it can); `needs_worker=False` asks
        about enqueueing only."""
        ...

    def prepare(self) -> None:
        """A fresh, empty database with the library's schema installed."""
        ...

    def discard(self) -> None:
        """Drop the database (or file) made by prepare."""
        ...

    def enqueue_noops(self, count: int, chunk: int) -> float:
        """Enqueue `count` noop jobs with the library's fastest bulk API, `chunk` per call;
        return the seconds spent in those calls (payload building included)."""
        ...

    def settle(self) -> None:
        """After a bulk load, before the worker starts (not timed): refresh the planner's
        statistics (ANALYZE), as autovacuum would within a minute. Without it PostgreSQL
        plans the first claims for an empty table; pgqueuer's dequeue then sorts the whole
        backlog on every call (48 ms per dequeue at 100,000 jobs, measured)."""
        ...

    def enqueue_probes(self, count: int, interval_s: float, record: bool) -> None:
        """Enqueue `count` probe jobs one at a time, `interval_s` apart, each carrying
        time.time() taken just before its enqueue call."""
        ...

    def worker(self, latency_file: Path | None) -> WorkerSpec:
        """The worker process: one process, concurrency 20 (or the library's equivalent)."""
        ...

    def unfinished(self) -> int:
        """Jobs neither finished nor failed, as the store shows them now."""
        ...


def paced(count: int, interval_s: float, action: Callable[[int], None]) -> None:
    """Call action(i) for i in range(count) on a fixed schedule (no drift)."""
    start = time.perf_counter()
    for i in range(count):
        delay = start + i * interval_s - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        action(i)


def available(targets: list[Target], suite: str, skipped: SuiteResult,
              needs_worker: bool = True) -> Iterator[Target]:
    """The targets that can run here; the others are recorded in `skipped` with why."""
    for target in targets:
        why = target.unavailable(needs_worker)
        if why:
            skipped.skipped[target.name] = why
            print(f"  {suite} {target.name}: skipped ({why})")
        else:
            yield target


def run_label(suite: str, target: Target, run_index: int) -> str:
    """A worker's label (its log file's name) for one run of a suite."""
    return f"{suite}-{target.name}-{run_index + 1}".replace("[", "-").replace("]", "")
