"""The App the multi-process tests run with `rota worker tests.worker.process_app:app`.

Configured by environment variables (the test sets them for each child):
  ROTA_TEST_STORE   store URL (required)
  ROTA_TEST_POOL    pool size (default 4)
  ROTA_TEST_LEASE_S lease duration in seconds (default 60)
  ROTA_TEST_POLL_S  poll interval in seconds (default 0.05)
  ROTA_TEST_LONG_S  how long a `work(n)` job with n < 0 takes (default 30)
  ROTA_TEST_LOG     file that every execution appends one line to (O_APPEND)
  ROTA_TEST_MAX_ATTEMPTS  the group's RetryPolicy max_attempts (default 10)

The `poison` job kills its whole process (os._exit) after a short pause, as a segfault or
the OOM killer would: the poison-job test runs it among healthy `work` jobs.

It prints `start N` when a handler starts and `done JOB_ID ATTEMPT KIND` after every
attempt, one line each, flushed, so the test can wait on them instead of sleeping.
"""

from __future__ import annotations

import os
import time

import rota

app = rota.App(os.environ["ROTA_TEST_STORE"])
_LONG_S = float(os.environ.get("ROTA_TEST_LONG_S", "30"))
_LOG = os.environ.get("ROTA_TEST_LOG")


def say(line: str) -> None:
    # One write(2) per line: atomic on a pipe, so lines from threads never interleave.
    os.write(1, f"{line}\n".encode())


@app.job("work")
def work(n: int) -> None:
    say(f"start {n}")
    started = time.monotonic()
    time.sleep(_LONG_S if n < 0 else 0.3 if n >= 1_000_000 else 0)
    if _LOG:
        fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{n} {os.getpid()} {started} {time.monotonic()}\n".encode())
        finally:
            os.close(fd)


@app.job("poison")
def poison() -> None:
    say("start poison")
    time.sleep(0.05)  # let the neighbours get going: they die with this process
    os._exit(70)


@app.on_outcome
def _print(event: rota.OutcomeEvent) -> None:
    say(f"done {event.job_id} {event.attempt} {event.kind.value}")


app.add_worker_group(rota.WorkerGroupOptions(
    name="main",
    policy=rota.Strict("default"),
    pool_size=int(os.environ.get("ROTA_TEST_POOL", "4")),
    lease_duration=float(os.environ.get("ROTA_TEST_LEASE_S", "60")),
    poll_interval=float(os.environ.get("ROTA_TEST_POLL_S", "0.05")),
    retry=rota.RetryPolicy(
        max_attempts=int(os.environ.get("ROTA_TEST_MAX_ATTEMPTS", "10")),
        backoff=lambda _attempt: 0,
    ),
))
