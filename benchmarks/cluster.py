"""A PostgreSQL cluster of a suite's own: `pg_createcluster` on a free port, started for
the suite and dropped at its end (also on failure or Ctrl-C, through `cleanup`). The
shared server on 5432 is never reconfigured; a suite that needs other settings (loaded
modules, stock autovacuum) makes one of these instead.

Used by the maintenance suite (pg_stat_statements, fsync off, many connections) and the
soak suite (stock settings but for pg_stat_statements and wal_level=logical).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from benchmarks import cleanup


@dataclass
class Cluster:
    version: str
    name: str
    port: int

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def admin(self, database: str = "postgres") -> Any:
        import psycopg

        return psycopg.connect(self.url(database), autocommit=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): "
                           f"{done.stderr.strip() or done.stdout.strip()}")


@contextmanager
def own_cluster(prefix: str, settings: Sequence[str] = (),
                extensions: Sequence[str] = ("pg_stat_statements",)) -> Iterator[Cluster]:
    """A cluster named `prefix_<random>` on a free port, with `settings` ("name=value",
    each a `pg_createcluster -o`) on top of the defaults `initdb` writes, `extensions`
    created in its `postgres` database; stopped and dropped after."""
    missing = [tool for tool in ("pg_createcluster", "pg_ctlcluster", "pg_dropcluster")
               if shutil.which(tool) is None]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} not found (apt install postgresql-common)")
    versions = sorted(os.listdir("/etc/postgresql")) if os.path.isdir("/etc/postgresql") else []
    if not versions:
        raise RuntimeError("no PostgreSQL server version under /etc/postgresql")
    cluster = Cluster(versions[-1], f"{prefix}_{uuid.uuid4().hex[:8]}", _free_port())

    def drop() -> None:
        subprocess.run(["pg_dropcluster", "--stop", cluster.version, cluster.name],
                       capture_output=True, timeout=180)

    options = [part for setting in settings for part in ("-o", setting)]
    _run(["pg_createcluster", "-p", str(cluster.port), *options,
          cluster.version, cluster.name, "--", "--auth=trust"])
    cleanup.on_exit(f"drop cluster {cluster.name}", drop)
    try:
        _run(["pg_ctlcluster", "--skip-systemctl-redirect", cluster.version, cluster.name,
              "start"])
        deadline = time.monotonic() + 60
        while True:
            try:
                with cluster.admin() as conn:
                    for extension in extensions:
                        conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield cluster
    finally:
        drop()
        cleanup.done(f"drop cluster {cluster.name}")
