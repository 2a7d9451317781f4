"""Worker subprocesses, each in its own process group so that stopping one stops its
children too, registered with `cleanup` so that none outlives the harness; and the wait
until a store shows no unfinished job, watching that the workers stay alive."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from benchmarks import cleanup
from benchmarks.venv import ROOT

LOG_DIR = ROOT / "benchmarks" / "results" / "logs"
TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class WorkerProcess:
    """A started worker: `stop()` sends SIGTERM to its group, then SIGKILL after a grace."""

    def __init__(self, label: str, argv: Sequence[str], env: Mapping[str, str] | None = None):
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.label = label
        self.log_path: Path = LOG_DIR / f"{label}.log"
        self._log = self.log_path.open("w")
        full_env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
        full_env.update(env or {})
        self.popen = subprocess.Popen(
            list(argv), cwd=ROOT, env=full_env, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._key = f"worker {label} pid {self.popen.pid}"
        cleanup.on_exit(self._key, self.stop)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def cpu_s(self) -> float:
        """User + system CPU time of the process (every thread) so far, from Linux /proc;
        read before `stop()`, so a drain's figure leaves the shutdown out."""
        fields = Path(f"/proc/{self.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
        # After the ")" of the command name: utime and stime are fields 14 and 15 (1-based).
        return (int(fields[11]) + int(fields[12])) / TICKS_PER_S

    def stop(self, grace_s: float = 10.0) -> int:
        if self.popen.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.popen.wait(grace_s)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.popen.wait()
        else:  # the leader exited; children of its group may remain
            self._signal(signal.SIGKILL)
        self._log.close()
        cleanup.done(self._key)
        return self.popen.returncode

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signum)

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text().splitlines()[-lines:])
        except OSError:
            return ""


def python_argv(*args: str) -> list[str]:
    """argv running this interpreter (the benchmark venv's python) with `args`."""
    return [sys.executable, *args]


class WorkerDied(RuntimeError):
    pass


def wait_drained(
    unfinished: Callable[[], int], workers: Sequence[WorkerProcess], timeout_s: float,
    poll_s: float, below: int = 1, polls: list[tuple[float, int]] | None = None,
) -> float:
    """Poll until unfinished() < below (default: 0 left); return the perf_counter() time
    that was first seen. `polls`, if given, gets every poll as (perf_counter(), left).

    Raises:
        WorkerDied: a worker exited first (its log tail is in the message).
        TimeoutError: still unfinished work after `timeout_s`.
    """
    deadline = time.perf_counter() + timeout_s
    while True:
        left = unfinished()
        seen_at = time.perf_counter()
        if polls is not None:
            polls.append((seen_at, left))
        if left < below:
            return seen_at
        for worker in workers:
            if not worker.alive():
                raise WorkerDied(f"worker {worker.label} exited ({worker.popen.returncode}) "
                                 f"with {left} jobs left:\n{worker.tail()}")
        if seen_at > deadline:
            raise TimeoutError(f"{left} jobs still unfinished after {timeout_s:.0f} s")
        time.sleep(poll_s)
