"""The PostgreSQL store's SQL and parameters: its named statements and migrations
(`sql/postgres/`, formatted with the schema's name), the claim that also completes, and
the parameters built as text literals.

Imports the core, the shared SQL base and psycopg.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import cache, lru_cache
from typing import Final

from psycopg import sql

from rota.core.jobs import Lease
from rota.store.sql_base import SqlFiles


def strip_comments(text: str) -> str:
    """`text` without its whole-line comments. psycopg parses a statement's placeholders on
    every execution unless its text is at most 4,096 bytes (its
    `MAX_CACHED_STATEMENT_LENGTH`); with its comments, claim.sql is over that."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.lstrip().startswith("--"))


# Migrations are migration_NNNN_description.sql, each one script.
FILES: Final = SqlFiles("postgres", r"migration_(\d{4})_(\w+)\.sql",
                        lambda script: (strip_comments(script),))
migrations: Final = FILES.migrations
SCHEMA_VERSION: Final = FILES.known_version()


# A claim that also completes a batch of successes, in one statement: claim.sql with
# complete.sql (or complete_results.sql) as its first CTE, and a first row whose attempt
# is how many jobs it completed and whose id is -1, or -2 when a completed job has
# children (the claim then leased nothing: claim.sql says why). The CTEs share one
# snapshot and touch different rows (leased, scheduled): exactly the two statements in one
# transaction. By name:
CLAIM_COMPLETING: Final = {"claim_completing": "complete",
                           "claim_completing_results": "complete_results"}
COMPLETING: Final = {complete: claim for claim, complete in CLAIM_COMPLETING.items()}
# The id of claim_completing's first row when a completed job has children.
COMPLETED_PARENTS: Final = -2


def _claim_completing_text(complete_name: str) -> str:
    claim, complete = FILES.text("claim"), FILES.text(complete_name)
    first = "-- claim_completing: completed AS (complete.sql RETURNING jobs.id),\n"
    middle = "      -- claim_completing: AND no completed job has children\n"
    last = "    -- claim_completing: UNION ALL the count of completed (in attempt, id -1 or -2)\n"
    if first not in claim or middle not in claim or last not in claim:
        # a packaging mistake, never user input
        raise RuntimeError("claim.sql lost the places marked for claim_completing")
    return (claim
            .replace(first, f"completed AS (\n{complete}    RETURNING jobs.id, "
                            "jobs.has_children\n),\n")
            .replace(middle, "      AND NOT EXISTS (SELECT FROM completed "
                             "WHERE completed.has_children)\n")
            .replace(last, "    UNION ALL\n    SELECT -1, CASE WHEN bool_or(has_children) "
                           f"THEN {COMPLETED_PARENTS} ELSE -1 END, NULL, NULL, "
                           "count(*)::int, NULL, NULL, NULL, NULL, NULL, NULL, NULL\n"
                           "    FROM completed\n"))


@cache
def _sql_text(name: str) -> str:
    """The statement of that name as sent: its file (or, for a claim that completes,
    two files composed) without whole-line comments."""
    if name in CLAIM_COMPLETING:
        return strip_comments(_claim_completing_text(CLAIM_COMPLETING[name]))
    return strip_comments(FILES.text(name))


def finished_channel(schema: str) -> str:
    """The channel of the finish hints of `schema`'s jobs (`listen_finished`): every
    statement that can finish jobs sends one notification on it, payload '', if it
    finished any (PostgreSQL folds a transaction's identical notifications into one)."""
    return f"{schema}_finished"


def render(text: str, schema: str) -> str:
    """`text` with `{schema}` replaced by `schema`, quoted as an identifier, and
    `{finished_channel}` by the finish hints' channel, as a string literal."""
    return sql.SQL(text).format(
        schema=sql.Identifier(schema),
        finished_channel=sql.Literal(finished_channel(schema)),
    ).as_string(None)


def render_sql(name: str, schema: str) -> str:
    """The named SQL file with `{schema}` replaced by `schema`, quoted as an identifier."""
    return render(_sql_text(name), schema)


# Admin listings, sent with their values bound client-side (no plan cache touches the
# simple query protocol), so they are planned for their filters and LIMIT: a generic plan
# (`plan_cache_mode`, see `PostgresConnection._configure`) expects a tenth of the table and,
# on a big one, starts parallel workers for a page of 50 (13-46 ms on ten million rows,
# against 0.5 ms to plan and 0.1 ms to run with the values).
PLANNED_EACH_RUN: Final = frozenset({"list_jobs", "list_jobs_newest", "list_jobs_finished"})


def advisory_lock_key(schema: str) -> int:
    """A stable signed 64-bit key for the migration lock of `schema`."""
    digest = hashlib.blake2b(f"rota.migrate:{schema}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


# -- parameters ----------------------------------------------------------------------------


def utc(moment: datetime, what: str = "now") -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{what} must be a timezone-aware datetime; got {moment!r}")
    return moment


def lease_columns(leases: Sequence[Lease]) -> dict[str, str]:
    """The leases as three array literals ('{7,8}', '{"w@h:1:ab","w@h:1:ab"}', '{1,1}'),
    cast in the SQL. psycopg's binary list dumpers run a Python loop per element (a
    `struct.pack` and two appends each, after a type survey of the list): ~4k instructions
    a job of a drain over the three arrays of `complete` (docs/decisions/0012)."""
    return {
        "ids": int_array([lease.job_id for lease in leases]),
        "owners": text_array([lease.owner for lease in leases], _quoted_owner),
        "attempts": int_array([lease.attempt for lease in leases]),
    }


def int_array(numbers: Iterable[int]) -> str:
    """An int[] / bigint[] literal ('{20,5}') of `numbers`, cast in the SQL: psycopg's
    list-of-int dumper picks an element type per call (docs/decisions/0012)."""
    return "{" + ",".join(map(str, numbers)) + "}"


def _quoted(text: str) -> str:
    """`text` as an element of an array literal: quoted, `"` and `\\` escaped."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# A process holds leases under a few owners (one per group): each quoted once.
_quoted_owner: Final = lru_cache(maxsize=256)(_quoted)


def text_array(texts: Iterable[str], quote: Callable[[str], str] = _quoted) -> str:
    """A text[] literal of `texts`, cast in the SQL (see `lease_columns`)."""
    return "{" + ",".join(map(quote, texts)) + "}"
