"""The PostgreSQL store's SQL and parameters: its named statements and migrations
(`sql/postgres/`, formatted with the schema's name), the claim that also completes, and
the parameters built as text literals.

Imports the core, the shared SQL base and psycopg.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import cache, lru_cache, partial
from typing import Final

from psycopg import sql

from rota.core.jobs import Lease
from rota.store.sql_base import SqlFiles, by_id_both_ways
from rota.store.sql_template import fill, strip_comments

# A claim that also completes a batch of successes, in one statement: the claim with
# complete.sql (or complete_results.sql) as its first CTE, and a first row whose attempt
# is how many jobs it completed and whose id is -1, or -2 when a completed job has
# children (the claim then leased nothing: claim.sql says why). By name:
CLAIM_COMPLETING: Final = {"claim_completing": "complete",
                           "claim_completing_results": "complete_results"}
COMPLETING: Final = {complete: claim for claim, complete in CLAIM_COMPLETING.items()}
# The id of claim_completing's first row when a completed job has children.
COMPLETED_PARENTS: Final = -2
# What `render` fills in every statement.
RENDERED: Final = frozenset({"schema", "finished_channel"})


def _claim(files: SqlFiles, wanted: str, complete: str | None = None) -> str:
    """A statement of claim.sql's template: `wanted`, the part that picks the Queues and
    their room; with `complete`, that statement's successes completed first."""
    parts = files.parts("claim")
    values = {"asked": parts["asked"], "wanted": parts[wanted], "completed": "",
              "limited_row": "", "completed_row": ""}
    if wanted == "free":  # (a limit or a rate hands the claim on to claim_limited)
        values.update(limited_row=parts["limited_row"], completed_guard="")
    if complete is not None:
        values.update(completed=parts["completed"], completed_guard=parts["completed_guard"],
                      completed_row=parts["completed_row"],
                      complete=strip_comments(files.text(complete)).rstrip("\n"),
                      completed_parents=str(COMPLETED_PARENTS))
    name = "claim" if wanted == "free" else "claim_limited"
    return fill(parts[""], values, later=RENDERED,
                what=f"rota's postgres claim.sql as {name}"
                     + (f" completing with {complete}.sql" if complete else ""))


# The statements composed from claim.sql, checked as each loads (rota.store.sql_template).
CLAIMS: Final[dict[str, Callable[[SqlFiles], str]]] = {
    "claim": partial(_claim, wanted="free"),
    "claim_limited": partial(_claim, wanted="room"),
    **{name: partial(_claim, wanted="free", complete=complete)
       for name, complete in CLAIM_COMPLETING.items()},
}

# Every composed statement: the claims, and find_jobs both ways from one file.
COMPOSED: Final = {**CLAIMS, **by_id_both_ways("find_jobs", later=RENDERED)}

# Migrations are migration_NNNN_description.sql, each one script.
FILES: Final = SqlFiles("postgres", r"migration_(\d{4})_(\w+)\.sql",
                        lambda script: (strip_comments(script),),
                        composed=COMPOSED, later=RENDERED)
migrations: Final = FILES.migrations
SCHEMA_VERSION: Final = FILES.known_version()


@cache
def _sql_text(name: str) -> str:
    """The statement of that name as sent (claim.sql's are composed from its parts),
    without whole-line comments: psycopg parses a statement's placeholders on every
    execution unless its text is at most 4,096 bytes (its `MAX_CACHED_STATEMENT_LENGTH`);
    with its comments, the claim is over that."""
    return strip_comments(FILES.statement(name))


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
PLANNED_EACH_RUN: Final = frozenset({"list_jobs", "list_jobs_newest", "list_jobs_finished",
                                     "find_jobs", "find_jobs_newest"})


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
