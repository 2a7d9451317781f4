"""A PostgreSQL restart and a 10 s stop mid-drain, on a cluster of the suite's own.

The guarantee (docs/reliability.md): workers ride out a database outage by themselves,
retrying with backoff and reconnecting; nothing is lost and, because the outage is shorter
than the lease, nothing runs twice. The cluster is created by `pg_createcluster` on a free
port for this module and dropped at its end (fixture `own_pg_cluster`); the shared server
on 5432 is never touched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import rota
from rota.core.jobs import JobState
from rota.store import StoreError
from tests.chaos.conftest import (
    OwnCluster,
    Supervisor,
    chaos_env,
    executions,
    state_counts,
)
from tests.pg import fresh_postgres_url
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

JOBS = 2_000
WORKERS = 2
STOP_S = 10.0
DEADLINE_S = 180  # generous: each scenario takes ~15-25 s


@pytest.fixture
def outage_store_url(own_pg_cluster: OwnCluster, request: pytest.FixtureRequest
                     ) -> Iterator[str]:
    yield from fresh_postgres_url(own_pg_cluster.admin_url, request.node.name)


def _succeeded(app: rota.App) -> int | None:
    """Jobs succeeded so far, or None while the database cannot be read."""
    try:
        return state_counts(app)[JobState.SUCCEEDED]
    except StoreError:
        return None


@pytest.mark.parametrize("outage", ["restart", "stop-10s"])
def test_workers_ride_out_a_postgres_outage_mid_drain_without_loss_or_duplicate(
    outage: str, own_pg_cluster: OwnCluster, outage_store_url: str,
    supervisors: Callable[..., Supervisor], tmp_path: Path,
    chaos_figures: Callable[..., None],
) -> None:
    # Given 2,000 jobs of 10 ms draining through two workers (pool 4, lease 30 s: longer
    # than the outage, so no lease may expire because of it)
    log = tmp_path / "executions.log"
    producer = rota.App(outage_store_url)
    try:
        producer.job("work")(lambda n: None)
        ids = producer.jobs["work"].enqueue_many([(n,) for n in range(JOBS)])
        supervisor = supervisors(chaos_env(outage_store_url, log, ROTA_CHAOS_JOB_S="0.01",
                                           ROTA_CHAOS_LEASE_S="30"), WORKERS)
        for worker in supervisor.workers:
            worker.wait_ready()
        assert wait_until(lambda: (_succeeded(producer) or 0) >= JOBS // 4, DEADLINE_S), (
            supervisor.stderr()
        )
        # When the database server restarts, or stops for 10 s, mid-drain
        before = _succeeded(producer) or 0
        went_down = time.monotonic()
        if outage == "restart":
            own_pg_cluster.ctl("restart", "-m", "fast")
        else:
            own_pg_cluster.ctl("stop", "-m", "fast")
            time.sleep(STOP_S)  # the outage itself, not a wait for a condition
            own_pg_cluster.ctl("start")
        assert wait_until(own_pg_cluster.ready, 60)
        came_back = time.monotonic()
        assert wait_until(lambda: (_succeeded(producer) or 0) > before, DEADLINE_S), (
            f"no progress after the {outage}\n{supervisor.stderr()}"
        )
        resumed = time.monotonic()
        # Then the same workers (no restart) reconnect by themselves and finish the drain
        assert wait_until(lambda: _succeeded(producer) == JOBS, DEADLINE_S), (
            f"{state_counts(producer)}\n{supervisor.stderr()}"
        )
        assert all(worker.alive() for worker in supervisor.workers), supervisor.stderr()
        assert supervisor.restarts == 0
        assert supervisor.stop() == [0] * WORKERS, supervisor.stderr()
        counts = state_counts(producer)
    finally:
        producer.close()
    # ... with every job run exactly once: nothing lost, no duplicate
    runs = executions(log)
    lost = [n for n in range(len(ids)) if runs.get(n, 0) == 0]
    duplicates = [n for n, count in runs.items() if count > 1]
    chaos_figures(
        f"postgres-{outage}", jobs=JOBS, succeeded_before=before,
        outage_s=round(came_back - went_down, 1),
        recovery_s=round(resumed - came_back, 2), duplicates=len(duplicates),
        lost=len(lost), worker_restarts=supervisor.restarts,
    )
    assert before < JOBS
    assert counts[JobState.SUCCEEDED] == JOBS and counts[JobState.LEASED] == 0
    assert lost == []
    assert duplicates == []
