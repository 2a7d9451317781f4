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

Jobs:
  work(n)   sleeps ROTA_CHAOS_JOB_S, then appends "n pid" to ROTA_CHAOS_LOG (one O_APPEND
            write, so lines from several processes never interleave): the side record of
            executions that the scenarios count duplicates and losses with.
  poison()  kills its own process at once (os._exit(1)), as a segfault or the OOM killer
            would: no exception, no outcome, no clean-up.

Every handler start prints `start N`, every outcome `done JOB_ID ATTEMPT KIND` (one line,
one write(2)), so the supervisor in the test waits on lines instead of sleeping.
"""

from __future__ import annotations

import os
import threading

import rota

_RETENTION_S = os.environ.get("ROTA_CHAOS_RETENTION_S")
_RETENTION = (rota.Retention(succeeded=float(_RETENTION_S), interval=1) if _RETENTION_S
              else rota.Retention())
app = rota.App(os.environ["ROTA_CHAOS_STORE"], retention=_RETENTION)
_JOB_S = float(os.environ.get("ROTA_CHAOS_JOB_S", "0.01"))
_LOG = os.environ.get("ROTA_CHAOS_LOG")


def say(line: str) -> None:
    os.write(1, f"{line}\n".encode())


@app.job("work")
def work(n: int) -> None:
    say(f"start {n}")
    if _JOB_S > 0:
        # Not time.sleep: under libfaketime (the clock-skew scenarios) it fails with EINVAL.
        threading.Event().wait(_JOB_S)
    if _LOG:
        fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{n} {os.getpid()}\n".encode())
        finally:
            os.close(fd)


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
