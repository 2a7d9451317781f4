"""rota: background jobs with fair, deterministic dispatch between Queues.

The public API is exactly what `__all__` lists.
"""

from __future__ import annotations

from rota.app import App
from rota.app.definition import ConfiguredJob, JobDefinition
from rota.app.status import Health
from rota.core.clock import Clock, SystemClock, VirtualClock
from rota.core.groups import WorkerGroupOptions
from rota.core.jobs import JobRecord, JobState, PayloadTooLarge
from rota.core.policy import DispatchPolicy, Strict, Weighted
from rota.core.progress import AttemptError, Progress
from rota.core.queue_controls import QueueInfo
from rota.core.rates import QueueRate
from rota.core.retention import Retention
from rota.core.retry import Retry, RetryPolicy, Snooze
from rota.core.schedules import ScheduleInfo
from rota.core.workers import (
    GroupFairness,
    QueueShare,
    ServedCount,
    WorkerGroupInfo,
    WorkerInfo,
)
from rota.store import SchemaTooNew, Store, StoreConfigError, StoreError
from rota.version import __version__
from rota.worker.context import CurrentJob, current_job
from rota.worker.events import OutcomeEvent, OutcomeKind

__all__ = [
    "App",
    "AttemptError",
    "Clock",
    "ConfiguredJob",
    "CurrentJob",
    "DispatchPolicy",
    "GroupFairness",
    "Health",
    "JobDefinition",
    "JobRecord",
    "JobState",
    "OutcomeEvent",
    "OutcomeKind",
    "PayloadTooLarge",
    "Progress",
    "QueueInfo",
    "QueueRate",
    "QueueShare",
    "Retention",
    "Retry",
    "RetryPolicy",
    "ScheduleInfo",
    "SchemaTooNew",
    "ServedCount",
    "Snooze",
    "Store",
    "StoreConfigError",
    "StoreError",
    "Strict",
    "SystemClock",
    "VirtualClock",
    "Weighted",
    "WorkerGroupInfo",
    "WorkerGroupOptions",
    "WorkerInfo",
    "__version__",
    "current_job",
]
