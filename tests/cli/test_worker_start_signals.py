"""A SIGINT/SIGTERM while `rota worker` is still starting stops it cleanly (a
SIGTERM during a slow App import must not kill it with the default action, nor a SIGINT
end it with exit 130). Real processes, a real slow import; waits on stderr lines, never on
sleeps."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rota.core.jobs import JobState, NewJob
from rota.store import open_store

DEADLINE_S = 30.0

SLOW_APP = """\
import sys
import time

import rota

app = rota.App({url!r})
app.add_worker_group(rota.WorkerGroupOptions(name="g", policy=rota.Strict("default")))


@app.job("j")
def j() -> None: ...


print("slow_app: importing", file=sys.stderr, flush=True)
time.sleep(120)  # stands for a heavy import (a web framework, a model); never finishes here
"""


def stderr_lines(process: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stderr is not None
        for text in process.stderr:
            lines.put(text)
        lines.put("")  # end of stream

    threading.Thread(target=pump, daemon=True).start()
    return lines


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_a_signal_during_a_slow_app_import_exits_cleanly_and_leases_nothing(
    tmp_path: Path, signum: signal.Signals
) -> None:
    # Given a store with a due job, and an App module whose import takes long
    url = f"sqlite:///{tmp_path / 'start.db'}"
    store = open_store(url)
    now = datetime.now(UTC)
    (job_id,) = store.enqueue([NewJob("j", "default", now)], now)
    (tmp_path / "slow_app.py").write_text(SLOW_APP.format(url=url))
    with subprocess.Popen(
        [sys.executable, "-m", "rota.cli", "worker", "slow_app:app"], cwd=tmp_path,
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    ) as process:
        try:
            lines = stderr_lines(process)
            seen: list[str] = []
            # When the signal arrives while the worker imports the App
            while not any("slow_app: importing" in text for text in seen):
                seen.append(lines.get(timeout=DEADLINE_S))
                assert seen[-1], f"the worker ended before importing the App: {seen}"
            process.send_signal(signum)
            code = process.wait(timeout=DEADLINE_S)
            while (text := lines.get(timeout=DEADLINE_S)) != "":
                seen.append(text)
        finally:
            if process.poll() is None:
                process.kill()
    err = "".join(seen)
    # Then it exits 0 with one line saying so, and no traceback
    assert code == 0, err
    assert f"rota worker: {signum.name} received while starting; stopped before claiming " \
        "any job" in err
    assert "Traceback" not in err
    # And the job is untouched: scheduled, never leased
    job = store.get_job(job_id)
    store.close()
    assert job is not None and (job.state, job.attempt) == (JobState.SCHEDULED, 0)


def test_the_start_up_handlers_are_put_back_when_the_worker_never_ran(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from rota.cli import main

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    assert main(["worker", "nomodule_here:app"]) == 2
    assert "cannot import" in capsys.readouterr().err
    assert {s: signal.getsignal(s) for s in before} == before
