"""Why a Queue is served less than its weight asks (the dashboard's fairness view)."""

from __future__ import annotations

import pytest

from rota.core.jobs import JobState
from rota.core.queue_controls import QueueInfo, held_back_reason


def info(*, paused: bool = False, limit: int | None = None, leased: int = 0,
         due: int = 0) -> QueueInfo:
    return QueueInfo("q", paused=paused, limit=limit,
                     counts={**dict.fromkeys(JobState, 0), JobState.LEASED: leased}, due=due)


@pytest.mark.parametrize(("queue", "reason"), [
    (info(paused=True, due=5), "paused"),
    (info(paused=True, limit=1, leased=1), "paused"),
    (info(limit=3, leased=3, due=9), "limit 3 reached"),
    (info(limit=0, due=2), "limit 0 reached"),
    (info(limit=3, leased=2, due=9), None),
    (info(due=0), "nothing due"),
    (None, "nothing due"),
    (info(due=4), None),
])
def test_the_first_reason_that_applies(queue: QueueInfo | None, reason: str | None) -> None:
    assert held_back_reason(queue) == reason
