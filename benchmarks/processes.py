"""Worker subprocesses, each in its own process group so that stopping one stops its
children too, registered with `cleanup` so that none outlives the harness."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from benchmarks import cleanup
from benchmarks.venv import ROOT

LOG_DIR = ROOT / "benchmarks" / "results" / "logs"


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
