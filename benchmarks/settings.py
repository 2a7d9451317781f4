"""Counts and knobs of every suite, full and --quick. Recorded in latest.json as they ran.

Full counts are chosen so `--suite all --runs 3` stays under 15 minutes on the 2-core
machine: procrastinate drains at a few hundred jobs/s here, so its drain uses 10,000 jobs
instead of 100,000 (the table says so).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True, slots=True)
class Settings:
    runs: int = 3
    drain_jobs: int = 100_000
    # Smaller drains for peers too slow for the budget: library name -> job count.
    drain_jobs_for: dict[str, int] = field(default_factory=lambda: {"procrastinate": 10_000})
    drain_timeout_s: float = 240.0
    enqueue_jobs: int = 100_000
    enqueue_chunk: int = 5_000
    latency_jobs: int = 1_000
    latency_interval_s: float = 0.005
    latency_warmup_jobs: int = 20
    ceiling_jobs: int = 100_000
    ceiling_batch: int = 100
    ceiling_connections: tuple[int, ...] = (1, 2, 4)
    fairness_backlog: tuple[tuple[str, int, int], ...] = (
        ("a", 6, 18_000), ("b", 3, 9_000), ("c", 1, 3_000))
    fairness_processes: int = 3
    fairness_pool: int = 20
    fairness_window: int = 1_000
    poll_interval_s: float = 0.1
    memory_jobs: int = 1_000_000
    memory_runs: int = 1
    memory_sample_s: float = 1.0
    memory_timeout_s: float = 300.0
    pickup_jobs: int = 1_000
    pickup_interval_s: float = 0.005
    pickup_warmup_jobs: int = 20
    pickup_idle_s: float = 10.0
    # The tree measured as "before": main just before the SQLite wake-up sockets.
    pickup_base: str = "285e124"
    # Table sizes of the scale suite (run only when named).
    scale_rows: tuple[int, ...] = (10_000, 1_000_000, 10_000_000)
    # The dashboard and schedules suites (run only when named).
    dashboard_jobs: int = 100_000
    dashboard_requests: int = 20
    schedule_calls: int = 2_000

    def drain_count(self, target: str) -> int:
        return min(self.drain_jobs, self.drain_jobs_for.get(target, self.drain_jobs))

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def quick(runs: int) -> Settings:
    """A smoke run: every code path, small counts, about two minutes."""
    return Settings(
        runs=runs, drain_jobs=5_000, drain_jobs_for={"procrastinate": 1_000},
        drain_timeout_s=120.0, enqueue_jobs=10_000, latency_jobs=200,
        ceiling_jobs=10_000,
        fairness_backlog=(("a", 6, 1_800), ("b", 3, 900), ("c", 1, 300)),
        fairness_window=200, memory_jobs=50_000, memory_sample_s=0.25,
        pickup_jobs=200, pickup_idle_s=2.0, dashboard_jobs=10_000, dashboard_requests=5,
        schedule_calls=200,
    )
