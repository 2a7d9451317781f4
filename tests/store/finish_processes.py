"""Entry points for the processes that tests/store/test_contract_finish_hints.py spawns.

Kept apart from the test module so a spawned child imports only rota, not pytest.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rota.core.jobs import Lease
from rota.store import open_store

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def complete(url: str, job_id: int, owner: str, attempt: int) -> None:
    """Complete one leased job from this process."""
    store = open_store(url)
    try:
        assert store.complete([Lease(job_id, owner, attempt)], T0) == 1
    finally:
        store.close()
