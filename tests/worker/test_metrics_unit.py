"""rota.metrics inside one process: the histograms' buckets are cumulative, the counter
comes from the groups' served counters, the pool gauges from the runtime."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import generate_latest

import rota
from rota.metrics import WorkerMetrics
from tests.waiting import until


def test_a_serving_app_is_measured() -> None:
    app = rota.App("memory://", retention=None)

    @app.job("quick")
    async def quick() -> None:
        return None

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), pool_size=3, poll_interval=0.05))
    metrics = WorkerMetrics(app)
    app.jobs["quick"].enqueue_many([()] * 4)
    app.jobs["quick"].configure(queue="typo").enqueue_many([()] * 2)

    async def scenario() -> None:
        async with app.serve() as runtime:
            await until(lambda: sum(runtime.groups[0].served.values()) >= 4, 10,
                        off_loop=False)
            page = generate_latest(metrics.registry).decode()
            assert 'rota_jobs_total{group="g",outcome="succeeded",queue="default"} 4.0' in page
            assert 'rota_job_duration_seconds_count{group="g",queue="default"} 4.0' in page
            assert 'rota_job_duration_seconds_bucket{group="g",le="+Inf",queue="default"} 4.0' \
                in page
            assert 'rota_pool_size{group="g"} 3.0' in page
            # The Queue nobody serves: its due jobs, as the worker's start look found them
            await until(lambda: 'rota_queue_unserved_jobs{queue="typo"} 2.0' in generate_latest(
                metrics.registry).decode(), 10, off_loop=False)
            page = generate_latest(metrics.registry).decode()
            assert 'rota_queue_unserved_jobs{queue="default"} 0.0' in page

    asyncio.run(scenario())
    app.close()


def test_histogram_buckets_are_cumulative() -> None:
    app = rota.App("memory://")
    metrics = WorkerMetrics(app)
    for value in (0.0001, 0.003, 0.003, 100.0, 1000.0):
        metrics.durations.observe(("g", "q"), value)
    [sample_family] = [metrics.durations.family()]
    buckets = {s.labels["le"]: s.value for s in sample_family.samples
               if s.name.endswith("_bucket")}
    assert buckets["0.001"] == 1 and buckets["0.005"] == 3 and buckets["300.0"] == 4
    assert buckets["+Inf"] == 5
    [total] = [s.value for s in sample_family.samples if s.name.endswith("_sum")]
    assert total == pytest.approx(1100.0061)
    app.close()
