"""The App every chaos scenario runs as `rota worker tests.chaos.chaos_app:app`.

Configured per child by environment variables:
  ROTA_CHAOS_STORE         store URL (required)
  ROTA_CHAOS_POOL          pool size (default 4)
  ROTA_CHAOS_LEASE_S       lease duration in seconds (default 1)
  ROTA_CHAOS_POLL_S        poll interval in seconds (default 0.05)
  ROTA_CHAOS_MAX_ATTEMPTS  the group's RetryPolicy max_attempts (default 10; no backoff)
  ROTA_CHAOS_JOB_S         how long a `work` job sleeps (default 0.01)
  ROTA_CHAOS_LOG           file every finished `work` execution appends one line to
  ROTA_CHAOS_RETENTION_S   how long succeeded jobs are kept (default: rota's, 1 day)
  ROTA_CHAOS_SPANS         file every `hold` run appends its start and its end to

Jobs:
  work(n)   sleeps ROTA_CHAOS_JOB_S, then appends "n pid" to ROTA_CHAOS_LOG (one O_APPEND
            write, so lines from several processes never interleave): the side record of
            executions that the scenarios count duplicates and losses with.
  hold(n, seconds)
            runs `seconds`, or less if it is told to stop (`cancel_requested`, looked at
            every 20 ms), and appends to ROTA_CHAOS_SPANS one line as it starts
            (`start RUN JOB_ID ATTEMPT PID WALL N`) and one as it ends (`end RUN WALL HOW`,
            HOW `done` or `stopped`; RUN a token unique to the run, WALL `time.time()`): the
            side record the network scenarios find overlapping runs and early starts in.
            Told to stop, it raises `HoldStopped`: the run did not finish its work.
  poison()  kills its own process at once (os._exit(1)), as a segfault or the OOM killer
            would: no exception, no outcome, no clean-up.

Every handler start prints `start N`, every outcome `done JOB_ID ATTEMPT KIND` (one line,
one write(2)), so the supervisor in the test waits on lines instead of sleeping.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

import rota

_RETENTION_S = os.environ.get("ROTA_CHAOS_RETENTION_S")
_RETENTION = (rota.Retention(succeeded=float(_RETENTION_S), interval=1) if _RETENTION_S
              else rota.Retention())
app = rota.App(os.environ["ROTA_CHAOS_STORE"], retention=_RETENTION)
_JOB_S = float(os.environ.get("ROTA_CHAOS_JOB_S", "0.01"))
_LOG = os.environ.get("ROTA_CHAOS_LOG")
_SPANS = os.environ.get("ROTA_CHAOS_SPANS")
# How often a `hold` run looks whether it was told to stop.
_HOLD_STEP_S = 0.02


def say(line: str) -> None:
    os.write(1, f"{line}\n".encode())


def append(path: str, line: str) -> None:
    """One O_APPEND write: lines from several processes never interleave."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


@app.job("work")
def work(n: int) -> None:
    say(f"start {n}")
    if _JOB_S > 0:
        # Not time.sleep: under libfaketime (the clock-skew scenarios) it fails with EINVAL.
        threading.Event().wait(_JOB_S)
    if _LOG:
        append(_LOG, f"{n} {os.getpid()}")


class HoldStopped(RuntimeError):
    """A `hold` run was told to stop (its cancel was requested, or its lease was lost)."""


@app.job("hold")
def hold(n: int, seconds: float) -> None:
    job = rota.current_job()
    run = uuid.uuid4().hex[:12]
    if _SPANS:
        append(_SPANS, f"start {run} {job.id} {job.attempt} {os.getpid()} {time.time():.6f} {n}")
    say(f"start {n}")
    until = time.monotonic() + seconds
    pause = threading.Event()
    while not job.cancel_requested and (left := until - time.monotonic()) > 0:
        pause.wait(min(_HOLD_STEP_S, left))
    how = "stopped" if job.cancel_requested else "done"
    if _SPANS:
        append(_SPANS, f"end {run} {time.time():.6f} {how}")
    if how == "stopped":
        raise HoldStopped(f"job {job.id} attempt {job.attempt} was told to stop")


@app.job("poison")
def poison() -> None:
    say("start poison")
    os._exit(1)


@app.on_outcome
def _print(event: rota.OutcomeEvent) -> None:
    say(f"done {event.job_id} {event.attempt} {event.kind.value}")


app.add_worker_group(rota.WorkerGroupOptions(
    name="main",
    policy=rota.Strict("default"),
    pool_size=int(os.environ.get("ROTA_CHAOS_POOL", "4")),
    lease_duration=float(os.environ.get("ROTA_CHAOS_LEASE_S", "1")),
    poll_interval=float(os.environ.get("ROTA_CHAOS_POLL_S", "0.05")),
    retry=rota.RetryPolicy(
        max_attempts=int(os.environ.get("ROTA_CHAOS_MAX_ATTEMPTS", "10")),
        backoff=lambda _attempt: 0,
    ),
))
