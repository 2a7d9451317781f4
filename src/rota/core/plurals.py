"""`counted`: a count and its noun, singular or plural, for every line rota prints or logs.

Pure: imports nothing.
"""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """`1 job`, `2 jobs`, `0 jobs`; `plural` when adding an s is wrong (`1 pass`,
    `3 passes`). A noun of several words is given whole (`finished job`)."""
    if count == 1:
        return f"{count} {singular}"
    return f"{count} {plural if plural is not None else singular + 's'}"
