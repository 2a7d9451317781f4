"""OpenTelemetry tracing, optional: one span per job attempt, linked to the enqueuing span.

Needs `opentelemetry-api` (`pip install 'rota[otel]'`) and, to record anything, an SDK
tracer provider set by the application (`opentelemetry.trace.set_tracer_provider`).
Without the package, or with no provider set, nothing here costs anything per job:

- enqueue (`current_trace_context`): inside a valid span, the propagator's carrier (W3C
  `traceparent`, `tracestate`, baggage) is stored with the job as JSON text
  (`NewJob.trace_context`); outside a span nothing is stored.
- run (`Tracing.attempt`): a span named after the job (kind CONSUMER) per attempt, with a
  *link* to the enqueuing span (not a parent: the attempt is its own unit of work, maybe
  one of several, long after the enqueue; the messaging conventions do the same). The
  span is the current one while the handler runs, so the handler's own spans nest under
  it. Attributes: `messaging.system` "rota", `messaging.operation` "process",
  `messaging.destination.name` (the Queue), `rota.job.id`, `rota.job.name`,
  `rota.job.attempt`, `rota.group`, and at the end `rota.outcome`; failures set the
  span's status to ERROR with the error text (a cancelled attempt's stays unset).

`Tracing.active()` is read when a runtime starts (and by `run_until_idle`): set the tracer
provider before starting the worker.

Imports the core and rota's leaf modules, and opentelemetry only when the process uses
it: a process that never imported `opentelemetry.trace` can have set no tracer provider
and entered no span, so rota asks OpenTelemetry nothing then (importing it cost every
worker ~15 ms of start-up, docs/benchmarks.md "Levers"). The one way to get a provider
without importing the package, the `OTEL_PYTHON_TRACER_PROVIDER` environment variable, is
honoured: rota imports it then.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from rota.core.jobs import JobRecord
from rota.core.outcomes import DeadLettered, Outcome, Quarantined, RetryAt
from rota.version import __version__
from rota.worker.outcome_names import OUTCOME_NAMES

__all__ = ["Tracing", "current_trace_context"]

# OpenTelemetry's way to name a tracer provider without code (an entry point).
_PROVIDER_VARIABLE = "OTEL_PYTHON_TRACER_PROVIDER"


def _trace_module() -> ModuleType | None:
    """`opentelemetry.trace` if this process uses OpenTelemetry (imported it, or names a
    provider in the environment) and it is installed; else None."""
    module = sys.modules.get("opentelemetry.trace")
    if module is not None:
        return module
    if _PROVIDER_VARIABLE not in os.environ:
        return None
    try:
        from opentelemetry import trace
    except ImportError:  # the extra is optional
        return None
    return trace


def current_trace_context() -> str | None:
    """The current span's context as JSON text to store with a job; None outside a span
    (or without OpenTelemetry)."""
    # No span can be current in a process that never imported opentelemetry.trace.
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    if not trace.get_current_span().get_span_context().is_valid:
        return None
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return json.dumps(carrier, separators=(",", ":")) if carrier else None


def _link(trace_context: str | None) -> list[Any]:
    if not trace_context:
        return []
    try:
        carrier = json.loads(trace_context)
    except ValueError:
        return []  # stored by something else: no link rather than no job
    if not isinstance(carrier, dict):
        return []
    from opentelemetry import propagate, trace

    context = propagate.extract({str(k): str(v) for k, v in carrier.items()})
    span_context = trace.get_current_span(context).get_span_context()
    return [trace.Link(span_context)] if span_context.is_valid else []


class Tracing:
    """Makes the spans of job attempts with one tracer (see the module docstring)."""

    def __init__(self, tracer: Any) -> None:
        self._tracer = tracer

    @classmethod
    def active(cls) -> Tracing | None:
        """A Tracing if OpenTelemetry is installed and a tracer provider was set; else None
        (then the runtime skips tracing altogether)."""
        trace = _trace_module()
        if trace is None:
            return None
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None
        return cls(provider.get_tracer("rota", __version__))

    @contextmanager
    def attempt(self, job: JobRecord, group: str) -> Iterator[Any]:
        """A span for one attempt at `job`, current inside the block, ended on leaving."""
        from opentelemetry import trace  # imported already: a Tracing exists

        span = self._tracer.start_span(
            job.name, kind=trace.SpanKind.CONSUMER, links=_link(job.trace_context),
            attributes={
                "messaging.system": "rota", "messaging.operation": "process",
                "messaging.destination.name": job.queue, "rota.job.id": job.id,
                "rota.job.name": job.name, "rota.job.attempt": job.attempt,
                "rota.group": group,
            },
        )
        with trace.use_span(span, end_on_exit=True, record_exception=False,
                            set_status_on_exception=False):
            yield span

    def begin(self, job: JobRecord, group: str) -> object:
        """`attempt` entered by hand, for a drive that calls before and after an attempt
        (rota.worker.hooks): the span is current in the caller's context until `end`,
        which must run in that same context."""
        scope = self.attempt(job, group)
        span = scope.__enter__()
        return (scope, span)

    def end(self, token: object, outcome: Outcome | None) -> None:
        """Record `outcome` on the span `begin` made, and end it."""
        assert isinstance(token, tuple)
        scope, span = token
        try:
            self.record(span, outcome)
        finally:
            scope.__exit__(None, None, None)

    @staticmethod
    def record(span: Any, outcome: Outcome | None) -> None:
        """Put the attempt's outcome on its span (None: handed back unfinished)."""
        if outcome is None:
            span.set_attribute("rota.outcome", "handed_back")
            return
        span.set_attribute("rota.outcome", OUTCOME_NAMES[type(outcome)])
        if isinstance(outcome, RetryAt | DeadLettered | Quarantined):
            from opentelemetry import trace

            span.set_status(trace.Status(trace.StatusCode.ERROR, outcome.error))
