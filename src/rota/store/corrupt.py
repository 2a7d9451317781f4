"""Claimed rows whose stored arguments cannot be decoded: quarantined right after the claim.

A row corrupted outside rota (hand-edited SQL, a broken migration, a disk fault) must not
fail the claim that leased it, which would strand the whole batch, nor reach a handler.
The durable stores decode rows tolerantly (`rota.core.jobs.decode_stored_arguments`) and
pass each claim's records through `quarantine_undecodable`, which quarantines those with
an `arguments_error` under their fresh lease (so it applies once, fenced like any outcome)
and returns the others. The memory store never holds such a row: it keeps decoded values.

Imports the core and the store contract.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Protocol

from rota.core.jobs import JobRecord, Lease
from rota.store.base import StoreError

logger = logging.getLogger("rota")


class Quarantining(Protocol):
    """What `quarantine_undecodable` needs of a store: its `quarantine` (the SQL stores'
    claims part calls it, which is not a whole `Store` on its own)."""

    def quarantine(self, lease: Lease, now: datetime, error: str) -> bool: ...


def quarantine_undecodable(
    store: Quarantining, jobs: list[JobRecord], now: datetime
) -> list[JobRecord]:
    """Quarantine the claimed `jobs` whose arguments cannot be decoded; return the rest.

    If the quarantine write fails, the row stays leased and is logged; its lease expires
    and the sweeper deals with it like any expired lease (a later claim tries again)."""
    for job in jobs:
        if job.arguments_error is not None:
            break
    else:
        return jobs  # the usual case: one pass over the batch, nothing built
    sound: list[JobRecord] = []
    for job in jobs:
        if job.arguments_error is None:
            sound.append(job)
            continue
        try:
            store.quarantine(job.lease, now, job.arguments_error)
        except StoreError as error:
            logger.error("job %s (%s): its stored arguments cannot be decoded, and "
                         "quarantining it failed (%s); it is retried when its lease expires",
                         job.id, job.name, error)
        else:
            logger.error("job %s (%s) quarantined: %s", job.id, job.name, job.arguments_error)
    return sound
