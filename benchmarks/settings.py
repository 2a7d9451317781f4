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
    weights_backlog: tuple[tuple[str, int, int], ...] = (
        ("a", 6, 18_000), ("b", 3, 9_000), ("c", 1, 3_000))
    weights_processes: int = 3
    weights_pool: int = 20
    weights_window: int = 1_000
    poll_interval_s: float = 0.1
    # The fairness suite (run only when named): one heavy tenant's burst beside a trickle
    # from light tenants, each light tenant one job every fairness_period_s.
    fairness_stores: tuple[str, ...] = ("sqlite", "postgres")
    fairness_heavy_jobs: int = 50_000
    fairness_light_tenants: int = 99
    fairness_period_s: float = 0.2
    fairness_job_s: float = 0.003
    fairness_pool: int = 20
    fairness_cap: int = 2
    fairness_window: int = 1_000
    fairness_warmup_s: float = 2.0
    # About as long as the heavy tenant's backlog (15-21 s at the default size), so a light
    # tenant's p99 is taken over about as many jobs (~100) with and without the neighbour
    fairness_baseline_s: float = 20.0
    fairness_timeout_s: float = 600.0
    fairness_json: str = "docs/images/fairness.json"  # relative to the checkout
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
    # The maintenance suite (run only when named): idle workers on a cluster of its own.
    # The tree measured as "before": main just before the maintenance leader election.
    maintenance_base: str = "599378a"
    maintenance_workers: tuple[int, ...] = (1, 20)
    maintenance_runs: int = 1
    maintenance_window_s: float = 60.0
    maintenance_settle_s: float = 5.0
    maintenance_schedule_s: float = 10.0
    # The soak suite (run only when named): a steady load on a cluster of its own while
    # the xmin horizon is held back.
    soak_systems: tuple[str, ...] = ("rota", "rota-3p", "procrastinate", "pgqueuer")
    soak_modes: tuple[str, ...] = ("idle_xact", "rr_readers", "slot")
    soak_rate: float = 800.0
    soak_clean_s: float = 600.0
    soak_held_s: float = 1800.0
    soak_recovery_s: float = 600.0
    soak_sample_s: float = 5.0
    soak_reader_s: float = 120.0
    soak_preload: int = 0  # succeeded jobs in rota's table before a soak run
    soak_jobs_reloptions: str = ""  # ALTER TABLE rota.jobs SET (...) before a soak run
    soak_queue_limit: int = 0  # rota's soak Queue's concurrency limit (0: none)
    # The families suite (run only when named): a Weighted family of families_members
    # member Queues the store knows, families_due of them with work, beside one Queue.
    families_stores: tuple[str, ...] = ("sqlite", "postgres")
    families_members: int = 100_000
    families_due: int = 1_000
    families_jobs: int = 50_000
    families_pickup_backlog: int = 100_000
    families_pickup_probes: int = 200
    families_pickup_interval_s: float = 0.025
    families_timeout_s: float = 300.0

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
        weights_backlog=(("a", 6, 1_800), ("b", 3, 900), ("c", 1, 300)),
        weights_window=200, fairness_heavy_jobs=5_000, fairness_baseline_s=3.0,
        fairness_json="benchmarks/results/fairness-quick.json",
        memory_jobs=50_000, memory_sample_s=0.25,
        pickup_jobs=200, pickup_idle_s=2.0, dashboard_jobs=10_000, dashboard_requests=5,
        schedule_calls=200, maintenance_window_s=15.0, maintenance_workers=(1, 4),
        soak_clean_s=60.0, soak_held_s=120.0, soak_recovery_s=60.0,
        families_members=10_000, families_due=100, families_jobs=4_000,
        families_pickup_backlog=10_000, families_pickup_probes=20, families_timeout_s=60.0,
    )
