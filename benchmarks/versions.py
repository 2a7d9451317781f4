"""What was measured: Python, PostgreSQL, rota's git sha, the peers' versions, the machine."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata

from benchmarks import pg
from benchmarks.venv import ROOT

PACKAGES = ("rota", "procrastinate", "pgqueuer", "psycopg", "asyncpg", "psycopg-pool")


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _package(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _memory() -> str:
    try:
        with open("/proc/meminfo") as meminfo:
            kib = int(meminfo.readline().split()[1])
        return f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        return "unknown"


def collect() -> dict[str, object]:
    dirty = bool(_git("status", "--porcelain", "--", "src"))
    return {
        "python": platform.python_version(),
        "postgresql": pg.server_version(),
        "postgresql_settings": pg.server_settings(),
        "rota_git_sha": _git("rev-parse", "HEAD") + ("+dirty-src" if dirty else ""),
        "rota_git_branch": _git("rev-parse", "--abbrev-ref", "HEAD"),
        "packages": {name: _package(name) for name in PACKAGES},
        "machine": {"cpus": os.cpu_count(), "memory": _memory(),
                    "platform": platform.platform()},
    }
