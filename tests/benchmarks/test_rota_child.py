"""The store-alone drain of `python -m benchmarks ab --what store`
(benchmarks/workers/rota_child.py): with `enqueued`, it enqueues that many jobs and drains
exactly `jobs` of them, so that two counted sizes enqueue alike."""

from __future__ import annotations

import pytest

from benchmarks.workers import rota_child
from rota.core.jobs import JobState
from rota.store import open_store


@pytest.mark.parametrize("store_kind", ["sqlite"])
@pytest.mark.parametrize("carry", [False, True])
def test_a_partial_drain_finishes_exactly_the_jobs_asked(store_url: str, carry: bool) -> None:
    result = rota_child.drain(store_url, 30, 20, 1, None, carry, enqueued=100)
    assert result["rota"]
    store = open_store(store_url)
    try:
        counts = store.count_jobs()
    finally:
        store.close()
    assert counts == {(rota_child.QUEUE, JobState.SUCCEEDED): 30,
                      (rota_child.QUEUE, JobState.SCHEDULED): 70}


@pytest.mark.parametrize("store_kind", ["sqlite"])
def test_a_partial_drain_takes_one_thread(store_url: str) -> None:
    with pytest.raises(SystemExit, match="one thread"):
        rota_child.drain(store_url, 30, 20, 2, None, False, enqueued=100)
