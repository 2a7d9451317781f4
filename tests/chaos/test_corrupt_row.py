"""A corrupt row: a job whose stored arguments cannot be decoded, on SQLite and PostgreSQL.

The guarantee (docs/reliability.md): one bad row never blocks the others. It ends
quarantined with the reason, every other job runs, and the read commands (`rota jobs`,
`rota queues`) show it instead of crashing.

The damage is done with raw SQL: invalid JSON on SQLite; on PostgreSQL, whose `json`
column refuses invalid JSON, a JSON number where the argument array belongs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import rota
from rota.core.jobs import JobState
from tests.chaos.conftest import (
    Supervisor,
    chaos_env,
    executions,
    raw_sql,
    run_cli,
    state_counts,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

JOBS = 20
CORRUPT = 9  # the index of the damaged job among them
DEADLINE_S = 12  # generous: the drain takes well under a second when nothing blocks it


def test_a_corrupt_row_is_quarantined_and_blocks_nothing(
    durable_store_url: str, producer: rota.App, supervisors: Callable[..., Supervisor],
    tmp_path: Path, capsys: pytest.CaptureFixture[str], chaos_figures: Callable[..., None],
) -> None:
    # Given 20 jobs, one of whose stored arguments was damaged behind the store's back
    log = tmp_path / "executions.log"
    ids = producer.jobs["work"].enqueue_many([(n,) for n in range(JOBS)])
    damage = "{not json" if durable_store_url.startswith("sqlite") else "42"
    raw_sql(durable_store_url, "UPDATE {jobs} SET args = %s WHERE id = %s",
            (damage, ids[CORRUPT]))
    # When a worker (pool 4, lease 1 s) drains the Queue
    supervisor = supervisors(chaos_env(durable_store_url, log), 1)

    def drained() -> bool:
        counts = state_counts(producer)
        return (counts[JobState.SUCCEEDED] == JOBS - 1
                and counts[JobState.QUARANTINED] == 1)

    finished = wait_until(drained, DEADLINE_S, tick=supervisor.check)
    counts = state_counts(producer)
    ((state, last_error),) = raw_sql(
        durable_store_url, "SELECT state, last_error FROM {jobs} WHERE id = %s",
        (ids[CORRUPT],),
    )
    runs = executions(log)
    chaos_figures(
        f"corrupt-row[{durable_store_url.split(':')[0]}]", jobs=JOBS, corrupt=1,
        succeeded=counts[JobState.SUCCEEDED], still_leased=counts[JobState.LEASED],
        corrupt_state=state, lost=sum(1 for n in range(JOBS) if n != CORRUPT and n not in runs),
    )
    # Then every other job succeeded, the corrupt one is quarantined with a reason
    assert finished, f"{counts}\n{supervisor.stderr()}"
    assert supervisor.stop() == [0], supervisor.stderr()
    assert state == "quarantined"
    assert isinstance(last_error, str) and last_error.strip()
    assert sorted(runs) == [n for n in range(JOBS) if n != CORRUPT]
    # And `rota jobs` and `rota queues` show it without crashing
    code, out, err = run_cli(capsys, "jobs", "--store", durable_store_url, "--json")
    assert (code, err) == (0, ""), err
    shown = {job["id"]: job for job in json.loads(out)}
    assert shown[ids[CORRUPT]]["state"] == "quarantined"
    code, out, err = run_cli(capsys, "jobs", "--store", durable_store_url,
                             "--state", "quarantined")
    assert code == 0 and "quarantined" in out, err
    code, out, err = run_cli(capsys, "queues", "--store", durable_store_url, "--json")
    assert code == 0, err
    (default,) = json.loads(out)
    assert default["name"] == "default"
    assert (default["counts"]["quarantined"], default["counts"]["succeeded"]) == (1, JOBS - 1)
