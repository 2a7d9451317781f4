"""`App.run` stops on SIGINT/SIGTERM on every platform: where the event loop has no
`add_signal_handler` (Windows), the handlers go through `signal.signal` instead.

Windows cannot be run here, so its event loop is imitated: `add_signal_handler` raises
NotImplementedError, as the Windows loops' do."""

from __future__ import annotations

import asyncio
import signal
import threading

import pytest

import rota
from rota.core.jobs import JobState


def _no_loop_signal_handlers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every event loop refuse add_signal_handler, as on Windows; record calls."""
    calls: list[str] = []

    def refuse(self: asyncio.AbstractEventLoop, *args: object) -> None:
        calls.append("add_signal_handler")
        raise NotImplementedError

    def remove(self: asyncio.AbstractEventLoop, *args: object) -> bool:
        calls.append("remove_signal_handler")
        return False

    loop = asyncio.new_event_loop()
    loop_class = type(loop)
    loop.close()
    monkeypatch.setattr(loop_class, "add_signal_handler", refuse)
    monkeypatch.setattr(loop_class, "remove_signal_handler", remove)
    return calls


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals are delivered to the main thread")
def test_run_stops_gracefully_on_sigint_without_loop_signal_handlers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _no_loop_signal_handlers(monkeypatch)
    before = signal.getsignal(signal.SIGINT)
    # Given an App whose job sends the process SIGINT while it runs
    app = rota.App("memory://")

    @app.job("interrupt")
    def interrupt() -> str:
        signal.raise_signal(signal.SIGINT)
        return "done"

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), poll_interval=0.05))
    job_id = interrupt.enqueue()
    # When it runs on a loop without add_signal_handler
    app.run()
    # Then the signal reached the App through signal.signal: a graceful stop, the job
    # finished, and no KeyboardInterrupt
    job = app.get_job(job_id)
    app.close()
    assert job is not None and job.state is JobState.SUCCEEDED and job.result == "done"
    assert "add_signal_handler" in calls and "remove_signal_handler" not in calls
    # And the previous SIGINT handler is back
    assert signal.getsignal(signal.SIGINT) is before
