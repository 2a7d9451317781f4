"""Why a Queue is served less than its weight asks (the dashboard's fairness view)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rota.core.jobs import JobState
from rota.core.queue_controls import QueueInfo, held_back_reason
from rota.core.rates import QueueRate

TEN_A_MINUTE = QueueRate(10, timedelta(minutes=1), 20)


def info(*, paused: bool = False, limit: int | None = None, leased: int = 0,
         due: int = 0, rate: QueueRate | None = None, tokens: int | None = None) -> QueueInfo:
    return QueueInfo("q", paused=paused, limit=limit,
                     counts={**dict.fromkeys(JobState, 0), JobState.LEASED: leased}, due=due,
                     rate=rate, tokens=tokens)


@pytest.mark.parametrize(("queue", "reason"), [
    (info(paused=True, due=5), "paused"),
    (info(paused=True, limit=1, leased=1), "paused"),
    (info(limit=3, leased=3, due=9), "limit 3 reached"),
    (info(limit=0, due=2), "limit 0 reached"),
    (info(limit=3, leased=2, due=9), None),
    (info(rate=TEN_A_MINUTE, tokens=0, due=3), "rate 10/1m reached"),
    (info(rate=QueueRate(6, timedelta(seconds=30), 6), tokens=0, due=3), "rate 6/30s reached"),
    (info(rate=TEN_A_MINUTE, tokens=0, due=0), "rate 10/1m reached"),
    (info(rate=TEN_A_MINUTE, tokens=0, paused=True, due=3), "paused"),
    (info(rate=TEN_A_MINUTE, tokens=0, limit=2, leased=2, due=3), "limit 2 reached"),
    (info(rate=TEN_A_MINUTE, tokens=1, due=3), None),
    (info(rate=TEN_A_MINUTE, tokens=4, due=0), "nothing due"),
    (info(due=0), "nothing due"),
    (None, "nothing due"),
    (info(due=4), None),
])
def test_the_first_reason_that_applies(queue: QueueInfo | None, reason: str | None) -> None:
    assert held_back_reason(queue) == reason
