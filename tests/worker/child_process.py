"""A `rota -v worker APP` child process for tests: its stdout lines are handed to a callback
as they arrive, its stderr is kept, and `ready` is set once it logged "worker started".

Shared by the worker process tests (tests/worker) and the chaos suite (tests/chaos).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class WorkerProcess:
    """One `rota -v worker APP *extra` child, run from the checkout with `env` added.

    `on_line(pid, text)` is called, on a reader thread, for every stdout line (stripped).
    `timeout_s` is the default wait for `wait_ready` and `wait`.
    """

    def __init__(self, app: str, env: Mapping[str, str], on_line: Callable[[int, str], None],
                 *extra: str, timeout_s: float = 30) -> None:
        child_env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", **env}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rota.cli", "-v", "worker", app, *extra],
            cwd=ROOT, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )
        self.pid = self.process.pid
        self.timeout_s = timeout_s
        self.errors: list[str] = []
        self.ready = threading.Event()  # set once the worker logged that it started
        self._readers = [
            threading.Thread(target=self._read, args=(on_line,), daemon=True),
            threading.Thread(target=self._read_errors, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, on_line: Callable[[int, str], None]) -> None:
        assert self.process.stdout is not None
        for text in self.process.stdout:
            on_line(self.pid, text.strip())

    def _read_errors(self) -> None:
        assert self.process.stderr is not None
        for text in self.process.stderr:
            self.errors.append(text)
            if "worker started" in text:
                self.ready.set()

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_ready(self, timeout_s: float | None = None) -> None:
        assert self.ready.wait(timeout_s or self.timeout_s), (
            f"worker {self.pid} never started:\n{self.stderr()}")

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def wait(self, timeout_s: float | None = None) -> int:
        code = self.process.wait(timeout_s or self.timeout_s)
        for reader in self._readers:
            reader.join(5)
        return code

    def stderr(self) -> str:
        return "".join(self.errors)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        for reader in self._readers:
            reader.join(5)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
