"""OpenTelemetry: one span per job attempt, linked to the enqueuing span, on every store,
under run_until_idle and the real-time runtime. Recorded with the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util._once import Once

import rota
from rota.worker.tracing import Tracing, current_trace_context


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """An SDK tracer provider set globally for the test, its spans kept in memory; the
    global is put back afterwards (OpenTelemetry's own test helpers do the same), so other
    tests run without tracing."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


def job_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.attributes
            and s.attributes.get("messaging.system") == "rota"]


def make(app: rota.App) -> None:
    tracer = trace.get_tracer("test")

    @app.job("traced")
    def traced(n: int) -> None:
        with tracer.start_as_current_span("inside"):
            if n < 0:
                raise ValueError("negative")

    app.add_worker_group(rota.WorkerGroupOptions(
        name="g", policy=rota.Strict("default"), poll_interval=0.05,
        retry=rota.RetryPolicy(max_attempts=1)))


def test_without_a_provider_nothing_is_traced() -> None:
    assert Tracing.active() is None
    assert current_trace_context() is None


def test_each_attempt_gets_a_span_linked_to_its_enqueue(
    spans: InMemorySpanExporter, make_app: Callable[[], rota.App]
) -> None:
    # Given a job enqueued inside a span, one outside, and one that fails
    app = make_app()
    make(app)
    with trace.get_tracer("test").start_as_current_span("request") as request:
        inside = app.jobs["traced"].enqueue(1)
        [failing] = app.jobs["traced"].enqueue_many([(-1,)])
    outside = app.jobs["traced"].enqueue(2)
    # When a worker runs them
    assert app.run_until_idle() == 3
    # Then each attempt has its span, linked to the request span if enqueued inside it
    by_id = {s.attributes["rota.job.id"]: s for s in job_spans(spans)}  # type: ignore[index]
    assert set(by_id) == {inside, failing, outside}
    linked = by_id[inside]
    assert linked.name == "traced" and linked.kind is SpanKind.CONSUMER
    assert [link.context.span_id for link in linked.links] == [request.get_span_context().span_id]
    assert linked.attributes["messaging.destination.name"] == "default"  # type: ignore[index]
    assert linked.attributes["rota.outcome"] == "succeeded"  # type: ignore[index]
    assert by_id[outside].links == ()
    assert by_id[failing].status.status_code is StatusCode.ERROR
    assert by_id[failing].attributes["rota.outcome"] == "dead_lettered"  # type: ignore[index]
    # And the handler's own spans nest under the attempt's span
    inner = [s for s in spans.get_finished_spans() if s.name == "inside"]
    assert {s.parent.span_id for s in inner if s.parent} == {
        s.context.span_id for s in by_id.values()}


def test_the_realtime_runtime_traces_attempts_too(
    spans: InMemorySpanExporter, make_app: Callable[[], rota.App]
) -> None:
    app = make_app()
    make(app)
    with trace.get_tracer("test").start_as_current_span("request") as request:
        job_id = app.jobs["traced"].enqueue(1)

    async def scenario() -> None:
        async with app.serve():
            while not job_spans(spans):
                await asyncio.sleep(0.02)

    asyncio.run(asyncio.wait_for(scenario(), 30))
    [span] = job_spans(spans)
    assert span.attributes["rota.job.id"] == job_id  # type: ignore[index]
    assert span.attributes["rota.group"] == "g"  # type: ignore[index]
    assert [link.context.trace_id for link in span.links] == [
        request.get_span_context().trace_id]


def test_an_enqueue_on_the_callers_connection_stores_the_trace_context_too(
    spans: InMemorySpanExporter, tmp_path: object
) -> None:
    import sqlite3
    from datetime import timedelta
    from pathlib import Path

    path = Path(str(tmp_path)) / "rota.db"
    app = rota.App(f"sqlite:///{path}")
    app.job("traced")(lambda: None)
    conn = sqlite3.connect(path)
    try:
        with trace.get_tracer("test").start_as_current_span("request") as request:
            job_id = app.jobs["traced"].configure(connection=conn).enqueue()
        conn.commit()
        now = app.clock.now()
        [claimed] = app.store.claim(["default"], 1, now=now, owner="w",
                                    lease_expires_at=now + timedelta(minutes=1))
        assert claimed.id == job_id and claimed.trace_context is not None
        assert format(request.get_span_context().trace_id, "032x") in claimed.trace_context
    finally:
        conn.close()
        app.close()


def test_a_process_that_never_imports_opentelemetry_does_not_pay_for_it() -> None:
    """rota imports OpenTelemetry only for a process that uses it (imported it, or names a
    provider in OTEL_PYTHON_TRACER_PROVIDER): a worker's start-up stays ~15 ms shorter."""
    import os
    import subprocess
    import sys

    code = (
        "import sys, rota\n"
        "from rota.worker.tracing import Tracing, current_trace_context\n"
        "active = Tracing.active()\n"
        "assert current_trace_context() is None\n"
        "print(active is not None, 'opentelemetry.trace' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OTEL_PYTHON_TRACER_PROVIDER"}
    plain = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True)
    assert plain.stdout.split() == ["False", "False"]
    named = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={**env, "OTEL_PYTHON_TRACER_PROVIDER": "sdk_tracer_provider"})
    assert named.stdout.split() == ["True", "True"]
