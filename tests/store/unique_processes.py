"""Entry point for the processes that tests/store/test_contract_unique_jobs.py spawns.

Kept apart from the test module so a spawned child imports only rota, not pytest.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from multiprocessing.synchronize import Barrier
from typing import Any

from rota.core.jobs import NewJob
from rota.store import open_store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def enqueue_keyed(url: str, start: Barrier, results: Any) -> None:
    """Open the store, wait for the others, enqueue the same keyed jobs; put the ids."""
    store = open_store(url)
    try:
        start.wait()
        ids = [store.enqueue([NewJob("job", "q", T0, key=f"k{n}")], T0)[0] for n in range(5)]
        results.put(ids)
    finally:
        store.close()


def enqueue_debounced(url: str, start: Barrier, results: Any, process: int) -> None:
    """Open the store, wait for the others, enqueue the same debounced keys (arguments
    naming the process and the round); put the ids."""
    store = open_store(url)
    try:
        start.wait()
        ids = []
        for n in range(5):
            job = NewJob("job", "q", T0 + timedelta(seconds=5), args_json=f"[{process}, {n}]",
                         key=f"k{n}", debounced=True, max_wait=timedelta(seconds=60))
            ids.append(store.enqueue([job], T0)[0])
        results.put(ids)
    finally:
        store.close()
