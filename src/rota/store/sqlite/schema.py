"""The SQLite store's SQL and columns: its named statements and migrations
(`sql/sqlite/`), times as INTEGER microseconds, and the job counts of migration 8.

Imports only the standard library, the core and the shared SQL base.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Final

from rota.store.sql_base import SqlFiles, by_id_both_ways
from rota.store.sql_template import fill


def statements(script: str) -> list[str]:
    """Split a script into complete statements (SQLite's own tokenizer decides)."""
    found: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            found.append(pending.strip())
            pending = ""
    leftover = [ln for ln in pending.splitlines() if ln.strip() and not ln.strip().startswith("--")]
    if leftover:
        raise ValueError(f"SQL script ends with an incomplete statement: {pending.strip()!r}")
    return found


def _claim(files: SqlFiles, name: str) -> str:
    """The statement `name` from claim.sql's template and parts (the file says which)."""
    parts = files.parts("claim")
    due, room = parts["due"], parts["room"]
    what = f"rota's sqlite claim.sql as {name}"
    if name == "claim":
        return fill(parts[""], {"picked": due, "take": room, "queue": ":queue",
                                "wanted": ":limit"}, what=what)
    if name == "claim_ones":
        return fill(parts[""], {"picked": parts["firsts"], "due": due, "take": "1",
                                "room": room, "queue": "asked.value", "wanted": "1"},
                    what=what)
    if name == "claim_many_arm":  # numbered when the count is known (:queue_3)
        return fill(parts["arm"], {"due": due, "take": room, "queue": ":queue_{n}",
                                   "wanted": ":limit_{n}"}, later={"n"}, what=what)
    # claim_many: the arms joined when the count is known (claims.py `claim_many_sql`)
    return fill(parts[""], {}, later={"picked"}, what=what)


# The statements composed from claim.sql, checked as each loads (rota.store.sql_template).
CLAIMS: Final[dict[str, Callable[[SqlFiles], str]]] = {
    name: functools.partial(_claim, name=name)
    for name in ("claim", "claim_ones", "claim_many_arm", "claim_many")
}

# Every composed statement: the claims, and find_jobs both ways from one file.
COMPOSED: Final = {**CLAIMS, **by_id_both_ways("find_jobs")}

# Migrations are NNNN_name.sql, each ending by setting PRAGMA user_version. complete.sql and
# count_jobs_add.sql take their rows when their count is known.
FILES: Final = SqlFiles("sqlite", r"(\d{4})_([a-z0-9_]+)\.sql", statements,
                        composed=COMPOSED, later={"rows"})
sql: Final = FILES.statement
migrations: Final = FILES.migrations
schema_version_known: Final = FILES.known_version


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)


def us(moment: datetime, what: str = "now") -> int:
    """`moment` as stored: INTEGER microseconds since the Unix epoch (UTC)."""
    if moment.tzinfo is None:
        raise ValueError(
            f"times must be timezone-aware UTC datetimes; got naive {moment!r} ({what}). "
            "Use datetime(..., tzinfo=UTC) or the App's clock"
        )
    return (moment - _EPOCH) // _MICROSECOND


def at(microseconds: int) -> datetime:
    """A stored time as a UTC datetime."""
    return _EPOCH + timedelta(microseconds=microseconds)


# count_jobs_add.sql: at most this many (Queue, state) pairs in one statement (3 parameters
# each, within SQLite's 999 on every version rota supports).
_MAX_COUNTED_PAIRS: Final = 300


@functools.cache
def _count_jobs_sql(pairs: int) -> str:
    return fill(sql("count_jobs_add"), {"rows": ", ".join(["(?, ?, ?)"] * pairs)},
                what="rota's sqlite count_jobs_add.sql")


def count_jobs(conn: sqlite3.Connection | sqlite3.Cursor,
               changes: Mapping[tuple[str, str], int]) -> None:
    """Add `changes` (jobs per (Queue, state value)) to the counts of migration 8, in the
    caller's write transaction, in one statement (per 300 pairs). The hot statements
    (enqueue, claim, complete, a schedule's fire) count themselves with it, once per
    transaction; the triggers of migration 8 count every other change."""
    values = [value for (queue, state), jobs in changes.items() if jobs
              for value in (queue, state, jobs)]
    step = 3 * _MAX_COUNTED_PAIRS
    for start in range(0, len(values), step):
        chunk = values[start:start + step]
        conn.execute(_count_jobs_sql(len(chunk) // 3), chunk)


def move(changes: dict[tuple[str, str], int], queue: str, jobs: int,
         from_state: str, to_state: str) -> None:
    """Add to `changes` the move of `jobs` jobs of `queue` from one state to another."""
    if jobs:
        changes[(queue, from_state)] = changes.get((queue, from_state), 0) - jobs
        changes[(queue, to_state)] = changes.get((queue, to_state), 0) + jobs
