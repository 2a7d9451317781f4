"""The name each outcome type goes by in served counters and spans.

The same words as `rota.OutcomeKind`'s values. The group loops count written outcomes by
these names (read by the worker registry and metrics) and tracing puts them on spans: a
module of its own so that each of them imports the names without importing the others.
Imports only the core's outcome types.
"""

from __future__ import annotations

from rota.core.outcomes import (
    Cancelled,
    DeadLettered,
    Expired,
    Quarantined,
    RetryAt,
    Snoozed,
    Succeeded,
)

OUTCOME_NAMES: dict[type, str] = {
    Succeeded: "succeeded",
    RetryAt: "retried",
    DeadLettered: "dead_lettered",
    Quarantined: "quarantined",
    Cancelled: "cancelled",
    Snoozed: "snoozed",
    Expired: "expired",
}
