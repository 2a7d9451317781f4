"""Attempt hooks: what runs around every job attempt, written once for both drives.

Tracing spans, metrics observers and `App.on_outcome` callbacks all want the same three
moments of an attempt, so each is an `AttemptHook` (dramatiq's middleware is the model)
and both drives, the real-time `GroupLoop` and the inline `run_until_idle`, call the
hooks they are given the same way:

1. `before_attempt(job, group)` just before the handler runs, in the context the handler
   runs in (a span made current there is the handler's parent); it returns a token;
2. `after_attempt(job, group, token, outcome)` once the handler is done, with that token
   and the outcome to be recorded, or None when none will be (handed back at shutdown,
   its lease lost);
3. `on_outcome(job, group, outcome, started_at, finished_at)` once that outcome is handed
   to be written (App clock times).

`before_attempt` runs in hook order, `after_attempt` in reverse (hooks nest), and
`on_outcome` in order. A hook never sees a quarantined job's handler (there is none) but
sees its attempt all the same. A hook that raises is logged and ignored, like an
`on_outcome` callback: the job runs and its Worker's slot is freed whatever a hook does
(a hook whose `before_attempt` raised gets no `after_attempt`). Hooks are internal (not
rota's public names; `App._hook_attempts` adds one): a drive with no hook pays nothing
per job, since it picks the path without them once per pass.

Imports the core and the worker's leaf modules.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final, Protocol

from rota.core.jobs import JobRecord
from rota.core.outcomes import Outcome
from rota.worker.events import OutcomeCallback, emit, outcome_event
from rota.worker.tracing import Tracing

logger = logging.getLogger("rota")

# The token of a hook whose `before_attempt` raised: it gets no `after_attempt`.
_FAILED: Final = object()


class AttemptHook:
    """Something told of every job attempt (see the module docstring). Every method does
    nothing here: a hook overrides the moments it needs."""

    def before_attempt(self, job: JobRecord, group: str) -> object:
        """The handler is about to run; what is returned comes back to `after_attempt`."""
        return None

    def after_attempt(self, job: JobRecord, group: str, token: object,
                      outcome: Outcome | None) -> None:
        """The handler is done; `outcome` is None when no outcome will be recorded."""

    def on_outcome(self, job: JobRecord, group: str, outcome: Outcome,
                   started_at: datetime, finished_at: datetime) -> None:
        """`outcome` was handed to be written (the store may still fence it off)."""


class TracingHook(AttemptHook):
    """One OpenTelemetry span per attempt (rota.worker.tracing), current while the
    handler runs."""

    def __init__(self, tracing: Tracing) -> None:
        self.tracing = tracing

    def before_attempt(self, job: JobRecord, group: str) -> object:
        return self.tracing.begin(job, group)

    def after_attempt(self, job: JobRecord, group: str, token: object,
                      outcome: Outcome | None) -> None:
        self.tracing.end(token, outcome)


class RunObserver(Protocol):
    """Told after every handler how long it ran (perf_counter seconds); called on the
    drive's thread, per job: keep it quick (`rota.metrics`)."""

    def job_ran(self, group: str, queue: str, ran_s: float, /) -> None: ...


class RunTimeHook(AttemptHook):
    """Times each handler for observers: only a hook reads a timer per job. An attempt
    whose outcome is not recorded (cut short at shutdown, its lease lost) is not timed:
    its run time is not the handler's."""

    def __init__(self, observers: Sequence[RunObserver]) -> None:
        self.observers = tuple(observers)

    def before_attempt(self, job: JobRecord, group: str) -> object:
        return time.perf_counter()

    def after_attempt(self, job: JobRecord, group: str, token: object,
                      outcome: Outcome | None) -> None:
        assert isinstance(token, float)
        if outcome is None:
            return
        ran_s = time.perf_counter() - token
        for observer in self.observers:
            observer.job_ran(group, job.queue, ran_s)


class OutcomeCallbacksHook(AttemptHook):
    """`App.on_outcome`'s callbacks: an `OutcomeEvent` per recorded outcome. `callbacks`
    is read per outcome, so one registered while a drive runs is called from then on."""

    def __init__(self, callbacks: Callable[[], Sequence[OutcomeCallback]]) -> None:
        self.callbacks = callbacks

    def on_outcome(self, job: JobRecord, group: str, outcome: Outcome,
                   started_at: datetime, finished_at: datetime) -> None:
        callbacks = self.callbacks()
        if callbacks:
            emit(callbacks, outcome_event(job, group, outcome, started_at, finished_at))


def attempt_hooks(
    *, tracing: Tracing | None, observers: Sequence[RunObserver] = (),
    outcome_callbacks: Callable[[], Sequence[OutcomeCallback]] | None = None,
    extra: Sequence[AttemptHook] = (),
) -> tuple[AttemptHook, ...]:
    """The hooks of a drive: only those with something to do, so that an empty tuple
    means the drive takes its path without hooks."""
    hooks: list[AttemptHook] = []
    if tracing is not None:
        hooks.append(TracingHook(tracing))
    if observers:
        hooks.append(RunTimeHook(observers))
    if outcome_callbacks is not None and outcome_callbacks():
        hooks.append(OutcomeCallbacksHook(outcome_callbacks))
    hooks.extend(extra)
    return tuple(hooks)


def call_before(hooks: Sequence[AttemptHook], job: JobRecord, group: str) -> list[object]:
    """Every hook's `before_attempt`, in order; their tokens."""
    tokens: list[object] = []
    for hook in hooks:
        try:
            tokens.append(hook.before_attempt(job, group))
        except Exception:
            _hook_raised(hook, "before", job)
            tokens.append(_FAILED)
    return tokens


def call_after(hooks: Sequence[AttemptHook], tokens: Sequence[object], job: JobRecord,
               group: str, outcome: Outcome | None) -> None:
    """Every hook's `after_attempt`, in reverse order, each with its own token."""
    for index in range(len(tokens) - 1, -1, -1):
        token = tokens[index]
        if token is _FAILED:
            continue
        try:
            hooks[index].after_attempt(job, group, token, outcome)
        except Exception:
            _hook_raised(hooks[index], "after", job)


def call_on_outcome(hooks: Sequence[AttemptHook], job: JobRecord, group: str,
                    outcome: Outcome, started_at: datetime, finished_at: datetime) -> None:
    """Every hook's `on_outcome`, in order."""
    for hook in hooks:
        try:
            hook.on_outcome(job, group, outcome, started_at, finished_at)
        except Exception:
            _hook_raised(hook, "on the outcome of", job)


def _hook_raised(hook: AttemptHook, when: str, job: JobRecord) -> None:
    logger.warning("attempt hook %r raised %s job %s (%s) attempt %s; ignored", hook, when,
                   job.id, job.name, job.attempt, exc_info=True)
