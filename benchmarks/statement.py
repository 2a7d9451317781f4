"""`python -m benchmarks statement`: variants of one hot PostgreSQL statement, interleaved
call by call on one connection.

    python3 -m benchmarks statement claim main=@claim \
        other=/tmp/claim_variant.sql[:/tmp/setup.sql] ... [--calls 4000] [--sync on|off]
    python3 -m benchmarks statement complete main=src/rota/store/sql/postgres/complete.sql ...

Each variant is LABEL=STATEMENT_FILE[:SETUP_FILE], or LABEL=@NAME[:SETUP_FILE] for this
tree's statement NAME as the store sends it (claim.sql is a template: `@claim` is its
claim, composed; a variant file is one whole statement). Every variant gets a schema of its own,
migrated by this tree's PostgresStore, then SETUP_FILE run in it (say, a trigger dropped
or replaced), then the rows it needs: scheduled jobs for `claim`, leased ones for
`complete`, one Queue. The statements are sent as the store sends them (whole-line
comments stripped, `{schema}` filled in, prepared, `plan_cache_mode =
force_generic_plan`), and the variants take turns call by call (order reversed every
other call), so drift on a shared machine falls on all of them alike. Each call claims or
completes 20 jobs (checked). Prints the median and p90 round trip of each variant, in ms.

`--sync off` (the default) sets synchronous_commit off for this connection only, so the
WAL flush's swing does not hide the server's work; `--sync on` measures what a worker
waits for. The schemas live in one fresh database (`BENCH_PG_URL`), dropped at the end.
Figures, never pass/fail: ~0.005 ms is the resolution seen on a 2-core machine, where
whole drains side by side (`python -m benchmarks ab`) cannot resolve 5 %.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from psycopg import sql

from benchmarks import cleanup, pg
from rota.store.postgres import PostgresStore
from rota.store.postgres.floors import START
from rota.store.postgres.schema import render_sql

DATABASE = "statement_bench"
BATCH = 20
INSERT = """
INSERT INTO {jobs} (name, queue, args, kwargs, due_at, created_at, state, attempt,
                    lease_owner, lease_expires_at, started_at)
SELECT 'noop', 'default', '[]', '{{}}', %(now)s, %(now)s, %(state)s, %(attempt)s,
       %(owner)s, %(expires)s, %(started)s
FROM generate_series(1, %(rows)s)
"""


def render(path: str, schema: str) -> str:
    """The file as the store sends it: whole-line comments out, `{schema}` quoted in; or,
    for @NAME, this tree's statement NAME."""
    if path.startswith("@"):
        return render_sql(path[1:], schema)
    text = "".join(line for line in Path(path).read_text().splitlines(keepends=True)
                   if not line.lstrip().startswith("--"))
    return sql.SQL(text).format(schema=sql.Identifier(schema)).as_string(None)


def prepare(conn: psycopg.Connection[tuple[object, ...]], url: str, kind: str, spec: str,
            calls: int, now: datetime) -> tuple[str, str, int]:
    """A schema for one variant, filled; returns (schema, statement, first job id)."""
    statement, _, setup = spec.partition(":")
    schema = f"stmt_ab_{uuid.uuid4().hex[:8]}"
    store = PostgresStore(url, schema=schema)
    store.count_jobs()  # migrates the schema
    store.close()
    if setup:
        conn.execute(render(setup, schema))
    leased = kind == "complete"
    conn.execute(sql.SQL(INSERT).format(jobs=sql.Identifier(schema, "jobs")), {
        "now": now, "rows": (calls + 20) * BATCH,
        "state": "leased" if leased else "scheduled", "attempt": 1 if leased else 0,
        "owner": "w1" if leased else None,
        "expires": now + timedelta(hours=1) if leased else None,
        "started": now if leased else None})
    conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(schema, "jobs")))
    first = conn.execute(sql.SQL("SELECT min(id) FROM {}").format(
        sql.Identifier(schema, "jobs"))).fetchone()
    return schema, render(statement, schema), int(first[0]) if first else 0


def main(options: argparse.Namespace) -> int:
    cleanup.install()
    url = pg.fresh_database(DATABASE)
    try:
        return compare(options, url)
    finally:
        cleanup.run_all()


def compare(options: argparse.Namespace, url: str) -> int:
    now = datetime.now(UTC)
    with psycopg.connect(url, autocommit=True) as conn:
        variants = {label: prepare(conn, url, options.kind, spec, options.calls, now)
                    for label, _, spec in (v.partition("=") for v in options.variants)}
        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute(f"SET synchronous_commit = {options.sync}")
        times: dict[str, list[float]] = {label: [] for label in variants}
        labels = list(variants)
        for call in range(options.calls):
            for label in labels if call % 2 == 0 else labels[::-1]:
                _, statement, first = variants[label]
                if options.kind == "claim":
                    params: dict[str, object] = {
                        "queues": ["default"], "limits": f"{{{BATCH}}}", "limit": BATCH,
                        "floor_dues": [START], "floor_ids": "{0}",
                        "now": now + timedelta(seconds=1), "owner": "w1",
                        "lease_expires_at": now + timedelta(hours=1)}
                else:
                    start = first + call * BATCH
                    params = {"ids": list(range(start, start + BATCH)),
                              "owners": ["w1"] * BATCH, "attempts": [1] * BATCH,
                              "now": now}
                began = time.perf_counter()
                cursor = conn.execute(statement, params, prepare=True)
                times[label].append(time.perf_counter() - began)
                done = len(cursor.fetchall()) if options.kind == "claim" else cursor.rowcount
                if done != BATCH:
                    raise SystemExit(f"{label}: {options.kind} moved {done} jobs, "
                                     f"not {BATCH}")
    print(f"{options.kind} of {BATCH}, {options.calls} calls each, synchronous_commit "
          f"{options.sync}, round trip in ms:")
    for label in labels:
        kept = times[label][100:]  # the first calls warm the plan cache
        print(f"  {label:12} median {statistics.median(kept) * 1000:.4f}  "
              f"p90 {statistics.quantiles(kept, n=10)[-1] * 1000:.4f}")
    return 0
