"""What unique jobs' partial index costs jobs without a key: enqueue and drain (claim +
complete) on two stores in one process, one with the index `(name, key) WHERE key IS NOT
NULL AND state IN ('scheduled', 'leased')` and one where it was dropped, alternating batch
by batch so that drift on a shared machine falls on both alike.

    python3 benchmarks/unique_index_cost.py [--stores sqlite postgres] [--jobs 20000]
        [--batch 100] [--url postgresql://...]

Prints jobs/s for each side and their ratio. Figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from rota.core.jobs import NewJob
from rota.store import Store, open_store

QUEUE = "bench"


def open_pair(kind: str, url: str, folder: str) -> tuple[Store, Store, Callable[[], None]]:
    if kind == "sqlite":
        stores = [open_store(f"sqlite:///{folder}/{side}.db") for side in ("with", "without")]
        conn = stores[1]._connection()  # type: ignore[attr-defined]
        conn.execute("DROP INDEX rota_jobs_live_key")
        return stores[0], stores[1], lambda: None
    import psycopg

    schemas = [f"rota_bench_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    stores = [open_store(f"{url}{'&' if '?' in url else '?'}schema={schema}")
              for schema in schemas]
    for store in stores:
        store.enqueue([NewJob("warm", "warm", datetime.now(UTC))], datetime.now(UTC))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP INDEX "{schemas[1]}".jobs_live_key')

    def drop() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            for schema in schemas:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

    return stores[0], stores[1], drop


def measure(kind: str, url: str, jobs: int, batch: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        with_index, without, cleanup = open_pair(kind, url, folder)
        sides = {"with index": with_index, "without": without}
        enqueue_s = dict.fromkeys(sides, 0.0)
        drain_s = dict.fromkeys(sides, 0.0)
        try:
            now = datetime.now(UTC)
            chunk = [NewJob("noop", QUEUE, now - timedelta(seconds=1), "[1]", "{}")] * batch
            for round_ in range(jobs // batch):
                order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
                for label in order:
                    started = time.perf_counter()
                    sides[label].enqueue(chunk, now)
                    enqueue_s[label] += time.perf_counter() - started
            for round_ in range(jobs // batch + 1):
                order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
                for label in order:
                    started = time.perf_counter()
                    claimed = sides[label].claim([QUEUE], batch, now=now, owner="bench",
                                                 lease_expires_at=now + timedelta(minutes=5))
                    sides[label].complete([job.lease for job in claimed], now)
                    drain_s[label] += time.perf_counter() - started
        finally:
            for store in sides.values():
                store.close()
            cleanup()
    done = jobs // batch * batch
    for what, seconds in (("enqueue", enqueue_s), ("drain", drain_s)):
        rates = {label: done / spent for label, spent in seconds.items()}
        print(f"{kind:>8} {what:>7}, batches of {batch}: with index {rates['with index']:>9,.0f}"
              f" jobs/s, without {rates['without']:>9,.0f} jobs/s, ratio "
              f"{rates['with index'] / rates['without']:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    for _ in range(options.repeat):
        for kind in options.stores:
            measure(kind, options.url, options.jobs, options.batch)


if __name__ == "__main__":
    main()
