"""The printed table, benchmarks/results/latest.json, and what was measured with: Python,
PostgreSQL, rota's git sha, the peers' versions, the machine."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from benchmarks import pg
from benchmarks.results import Row, SuiteResult
from benchmarks.venv import BENCH_DIR, ROOT

RESULTS = BENCH_DIR / "results"
PACKAGES = ("rota", "procrastinate", "pgqueuer", "psycopg", "asyncpg", "psycopg-pool")


def _number(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def table(rows: list[Row]) -> str:
    header = ("suite", "subject", "metric", "median", "min", "max", "note")
    lines = [header]
    for row in rows:
        f = row.figure
        lines.append((row.suite, row.subject, row.metric, _number(f.median), _number(f.min),
                      _number(f.max), f.note))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    right = {3, 4, 5}
    out = []
    for n, line in enumerate(lines):
        cells = [c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                 for i, c in enumerate(line)]
        out.append("| " + " | ".join(cells) + " |")
        if n == 0:
            out.append("|" + "|".join(
                "-" * (w + 1) + (":" if i in right else "-") for i, w in enumerate(widths)) + "|")
    return "\n".join(out)


def write_json(path: Path, payload: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")


def merge(
    results: dict[str, SuiteResult], suite_order: tuple[str, ...]
) -> tuple[list[Row], dict[str, str], dict[str, object]]:
    """All rows, grouped by suite in `suite_order` (stable within a suite)."""
    rows: list[Row] = []
    skipped: dict[str, str] = {}
    detail: dict[str, object] = {}
    for name, result in results.items():
        rows.extend(result.rows)
        skipped.update({f"{name}: {subject}": why for subject, why in result.skipped.items()})
        if result.detail:
            detail[name] = result.detail
    rank = {suite: n for n, suite in enumerate(suite_order)}
    rows.sort(key=lambda row: rank.get(row.suite, len(rank)))
    return rows, skipped, detail


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


def versions() -> dict[str, object]:
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
