"""How the durable stores write the worker registry's values into columns: a worker's
groups, jobs in flight and served totals as JSON text, a group's policy as (kind, Queues
JSON, weights JSON). Shared by the SQLite and PostgreSQL stores so both read and write the
same text.

Imports only the pure core.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from rota.core.workers import (
    ServedCount,
    WorkerGroupInfo,
    policy_from_parts,
    policy_parts,
)


def groups_json(groups: Sequence[WorkerGroupInfo]) -> str:
    entries = []
    for group in groups:
        kind, queues, weights = policy_parts(group.policy)
        entries.append({
            "name": group.name, "kind": kind, "queues": list(queues),
            "weights": None if weights is None else list(weights),
            "pool_size": group.pool_size, "owner": group.owner,
        })
    return json.dumps(entries, separators=(",", ":"))


def groups_from_json(text: str, in_flight_text: str) -> tuple[WorkerGroupInfo, ...]:
    in_flight = in_flight_from_json(in_flight_text)
    groups: list[WorkerGroupInfo] = []
    for entry in json.loads(text):
        groups.append(WorkerGroupInfo(
            name=entry["name"],
            policy=policy_from_parts(entry["kind"], entry["queues"], entry["weights"]),
            pool_size=int(entry["pool_size"]), in_flight=in_flight.get(entry["name"], 0),
            owner=str(entry.get("owner", "")),
        ))
    return tuple(groups)


def in_flight_json(in_flight: Mapping[str, int]) -> str:
    return json.dumps({str(name): int(count) for name, count in in_flight.items()},
                      separators=(",", ":"))


def in_flight_from_json(text: str) -> dict[str, int]:
    loaded: dict[str, Any] = json.loads(text)
    return {str(name): int(count) for name, count in loaded.items()}


def served_json(served: Sequence[ServedCount]) -> str:
    return json.dumps([[c.group, c.queue, c.outcome, c.count] for c in served],
                      separators=(",", ":"))


def served_from_json(text: str) -> tuple[ServedCount, ...]:
    return tuple(
        ServedCount(group=str(group), queue=str(queue), outcome=str(outcome), count=int(count))
        for group, queue, outcome, count in json.loads(text)
    )


def policy_columns(group: WorkerGroupInfo) -> tuple[str, str, str | None]:
    """(kind, Queues JSON, weights JSON or None) of a group's policy."""
    kind, queues, weights = policy_parts(group.policy)
    return kind, json.dumps(list(queues)), None if weights is None else json.dumps(list(weights))


def group_from_columns(
    name: str, kind: str, queues: str, weights: str | None, pool_size: int, seen_at: datetime
) -> WorkerGroupInfo:
    return WorkerGroupInfo(
        name=name,
        policy=policy_from_parts(kind, json.loads(queues),
                                 None if weights is None else json.loads(weights)),
        pool_size=pool_size, seen_at=seen_at,
    )
