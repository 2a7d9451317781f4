"""Named SQL files of the harness's own workers (raw ceiling, fairness baseline)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

SQL_DIR = Path(__file__).resolve().parent


@cache
def load(folder: str, name: str) -> str:
    return (SQL_DIR / folder / f"{name}.sql").read_text()
