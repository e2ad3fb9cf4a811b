"""OpenTelemetry: a producer span on ``add``, the W3C trace context in the job record,
a consumer span per run as its child; checked with the SDK's in-memory exporter. And
without a provider, or without the package, nothing changes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from oqronkit.telemetry import tracing

from .conftest import built_engine, running, wait_until

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracing.set_tracer_provider(provider)
    try:
        yield memory
    finally:
        tracing.set_tracer_provider(None)
        provider.shutdown()


def traceparent(span) -> str:
    context = span.context
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def spans_named(exporter: InMemorySpanExporter, name: str) -> list:
    return [s for s in exporter.get_finished_spans() if s.name == name]


@pytest.mark.parametrize("mode", ["sqlite", "postgres"])
def test_a_run_is_a_child_of_the_add_that_made_its_job(mode: str, exporter, request, tmp_path, scope_names):
    with built_engine(mode, request, tmp_path, scope_names[0]) as engine:
        mails = engine.queue("mails", retries=1, backoff=0.05)

        @mails.handler
        def send(ctx):
            if ctx.data.get("fail"):
                raise ValueError("no mailbox")
            return {"sent": True}

        tracer = tracing._otel.tracer()
        with tracer.start_as_current_span("web request") as outer:
            ok = mails.add({"to": "a@example.com"}, job_id="ok-1")
        bad = mails.add({"fail": True}, job_id="bad-1")
        stored = engine.durable.get("queue_job:mails", "ok-1")
        assert stored is not None
        carried = stored.value["traceContext"]
        with running(engine):
            wait_until(lambda: len(spans_named(exporter, "process mails")) == 3, timeout=20)

    sends = {s.attributes["oqron.job.id"]: s for s in spans_named(exporter, "send mails")}
    assert set(sends) == {"ok-1", "bad-1"}
    send = sends["ok-1"]
    assert send.kind == SpanKind.PRODUCER and send.parent.span_id == outer.get_span_context().span_id
    assert send.attributes["messaging.system"] == "oqronkit" and send.attributes["oqron.queue"] == "mails"
    assert carried == {"traceparent": traceparent(send)}  # W3C, in the job record
    assert ok.trace_context == carried

    runs = spans_named(exporter, "process mails")
    done = next(s for s in runs if s.attributes["oqron.job.id"] == "ok-1")
    assert done.kind == SpanKind.CONSUMER and done.parent.span_id == send.context.span_id
    assert done.context.trace_id == send.context.trace_id
    assert done.attributes["oqron.status"] == "completed" and done.attributes["oqron.job.attempt"] == 1
    assert done.attributes["oqron.run.id"] and done.status.status_code == StatusCode.UNSET
    failures = sorted((s for s in runs if s.attributes["oqron.job.id"] == "bad-1"),
                      key=lambda s: s.attributes["oqron.job.attempt"])
    assert [s.attributes["oqron.job.attempt"] for s in failures] == [1, 2]
    assert all(s.parent.span_id == sends["bad-1"].context.span_id for s in failures)  # every attempt, one parent
    assert bad.trace_context and failures[0].context.trace_id != done.context.trace_id  # no request around it
    for span in failures:
        assert span.attributes["oqron.status"] == "failed" and span.status.status_code == StatusCode.ERROR
        assert span.status.description == "no mailbox"
        assert [e.name for e in span.events] == ["exception"]


def test_an_async_handler_and_a_bulk_add(exporter, request, tmp_path, scope_names):
    with built_engine("sqlite", request, tmp_path, scope_names[0]) as engine:
        ticks = engine.queue("ticks")

        @ticks.handler
        async def tick(ctx):
            return ctx.data

        jobs = ticks.add_bulk([{"n": i} for i in range(3)])
        with running(engine):
            wait_until(lambda: len(spans_named(exporter, "process ticks")) == 3, timeout=20)
    (send,) = spans_named(exporter, "send ticks")
    assert send.attributes["messaging.batch.message_count"] == 3 and "oqron.job.id" not in send.attributes
    assert {j.trace_context["traceparent"] for j in jobs} == {traceparent(send)}
    assert all(s.parent.span_id == send.context.span_id for s in spans_named(exporter, "process ticks"))


def test_a_batch_call_is_one_span_linked_to_each_job(exporter, request, tmp_path, scope_names):
    from oqronkit import Batch

    with built_engine("sqlite", request, tmp_path, scope_names[0]) as engine:
        sends = engine.queue("sends", batch=Batch(size=3, max_wait=0.2))

        @sends.handler
        def send_all(contexts):
            return [ValueError("bounced") if c.data["n"] == 1 else {"ok": True} for c in contexts]

        jobs = [sends.add({"n": n}, attempts=1) for n in range(3)]
        with running(engine):
            wait_until(lambda: spans_named(exporter, "process sends"), timeout=20)
    (call,) = spans_named(exporter, "process sends")
    producers = {s.attributes["oqron.job.id"]: s for s in spans_named(exporter, "send sends")}
    assert call.kind == SpanKind.CONSUMER and call.parent is None
    assert call.attributes["messaging.batch.message_count"] == 3 and call.attributes["oqron.batch.id"]
    assert {link.context.span_id for link in call.links} == {producers[j.id].context.span_id for j in jobs}
    assert call.status.status_code == StatusCode.ERROR and call.status.description == "bounced"


def test_without_a_provider_no_span_and_no_trace_context(request, tmp_path, scope_names):
    assert tracing._otel.tracer() is None  # the global provider is OpenTelemetry's proxy: nobody configured it
    with built_engine("sqlite", request, tmp_path, scope_names[0]) as engine:
        job = engine.queue("mails").add({"n": 1})
        assert job.trace_context is None
        assert engine.durable.get("queue_job:mails", job.id).value["traceContext"] is None


def test_without_the_package_jobs_still_run(tmp_path):
    script = f"""
import sys
sys.modules["opentelemetry"] = None  # as if it were not installed: every import of it fails
import oqronkit
from oqronkit.worker import WorkerProcess
engine = oqronkit.Engine(oqronkit.OqronConfig(mode="sqlite", database_url="sqlite:///{tmp_path}/o.sqlite3"),
                         registry=oqronkit.Registry())
q = engine.queue("mails")
q.handler(lambda ctx: {{"ok": True}})
job = q.add({{"n": 1}})
assert job.trace_context is None
process = WorkerProcess(engine, burst=True, poll_interval=0.05)
process.run()
assert process.stats_snapshot().get("completed") == 1, process.stats_snapshot()
print("ran")
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ran", done.stderr
