"""`supervise`: the one wrapper every runtime duty runs under."""

from __future__ import annotations

import asyncio
import logging

import pytest

from rota.worker.supervision import RESTART_CAP_S, RESTART_FIRST_S, supervise


def test_a_duty_that_raises_is_logged_once_per_failure_backed_off_and_run_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a duty that raises three different exceptions, then ends normally
    failures: list[BaseException] = [KeyError("k"), ValueError("v"), RuntimeError("r")]
    runs = 0
    delays: list[float] = []

    async def duty() -> None:
        nonlocal runs
        runs += 1
        if failures:
            raise failures.pop(0)

    async def sleep(delay_s: float) -> None:
        delays.append(delay_s)

    # When it runs under supervise
    with caplog.at_level(logging.ERROR, logger="rota"):
        asyncio.run(supervise("group g: test duty", duty, sleep=sleep))
    # Then it ran four times, each failure logged once at ERROR with its traceback, and the
    # backoff doubled between the restarts
    assert runs == 4
    records = [r for r in caplog.records if "group g: test duty failed" in r.getMessage()]
    assert [type(r.exc_info[1]).__name__ for r in records if r.exc_info] == [
        "KeyError", "ValueError", "RuntimeError"]
    assert all(r.levelno == logging.ERROR for r in records)
    assert delays == [RESTART_FIRST_S, RESTART_FIRST_S * 2, RESTART_FIRST_S * 4]


def test_the_backoff_is_capped_and_cancellation_is_not_a_failure() -> None:
    delays: list[float] = []
    stop = asyncio.Event()

    async def duty() -> None:
        raise OSError("always")

    async def sleep(delay_s: float) -> None:
        delays.append(delay_s)
        if len(delays) == 12:
            stop.set()
        await asyncio.sleep(0)

    async def scenario() -> None:
        task = asyncio.create_task(supervise("duty", duty, sleep=sleep))
        await stop.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    logging.getLogger("rota").disabled = True
    try:
        asyncio.run(scenario())
    finally:
        logging.getLogger("rota").disabled = False
    assert max(delays) == RESTART_CAP_S and delays[-1] == RESTART_CAP_S
