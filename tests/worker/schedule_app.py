"""The App the schedule process tests run with `rota worker tests.worker.schedule_app:app`.

Configured by environment variables (the test sets them for each child):
  ROTA_TEST_STORE   store URL (required)

A schedule "tick" fires the job "tick" every second. The handler prints `tick PID DUE_AT`
(the instant it was fired for), one line each, flushed, so the test can wait on the
lines instead of sleeping.
"""

from __future__ import annotations

import os

import rota

app = rota.App(os.environ["ROTA_TEST_STORE"])


@app.job("tick")
def tick() -> None:
    job = app.get_job(rota.current_job().id)
    due = "?" if job is None else job.due_at.isoformat()
    # One write(2) per line: atomic on a pipe, so lines from threads never interleave.
    os.write(1, f"tick {os.getpid()} {due}\n".encode())


app.schedule("tick", tick, every=1)
app.add_worker_group(rota.WorkerGroupOptions(
    name="main", policy=rota.Strict("default"), pool_size=2, poll_interval=0.5,
))
