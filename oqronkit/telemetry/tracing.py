"""OpenTelemetry spans around ``add`` and each run, when the application configured a
tracer provider (``opentelemetry.trace.set_tracer_provider``); nothing otherwise, and
nothing at all without the ``opentelemetry-api`` package.

- ``add`` / ``add_bulk`` open a PRODUCER span ``send <queue>``; each job stores the
  W3C trace context it was added in (``traceContext``: ``{"traceparent": ...}``).
- each attempt runs its handler inside a CONSUMER span ``process <queue>``, a child
  of the producer span, current while the handler runs (its own spans nest under it);
  a batch handler's call is one such span linked to each job's producer span.

Whether tracing is on is asked at most once a second (``RECHECK``), not per job: a
provider set with OpenTelemetry's own ``set_tracer_provider`` while jobs run is used
within a second; ``oqronkit.telemetry.tracing.set_tracer_provider`` takes effect at once.
A process that never imported ``opentelemetry`` (and names no provider in
``OTEL_PYTHON_TRACER_PROVIDER``) cannot have configured one: it is never imported then.

Attributes: ``messaging.system`` (oqronkit), ``messaging.destination.name`` and
``oqron.queue``, ``messaging.message.id`` and ``oqron.job.id``, ``oqron.job.attempt``,
``oqron.run.id`` and ``oqron.status`` (the run's status); a failed run's span has
status ERROR and the exception recorded.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import otel_provider_named

if TYPE_CHECKING:
    from ..queues.jobs import Job

SYSTEM = "oqronkit"
_NULL: AbstractContextManager[Any] = contextlib.nullcontext()
_RUN_STATUS = {"completed": "completed", "failed": "failed", "discarded": "failed", "timeout": "failed",
               "lost": "failed", "cancelled": "cancelled", "interrupted": "cancelled", "postponed": "held"}


class _Otel:
    """The OpenTelemetry API, imported once (None when it is not installed), and the
    tracer of the provider in use."""

    def __init__(self) -> None:
        self.loaded = False
        self.api: Any = None
        self.propagator: Any = None
        self.provider: Any = None  # set_tracer_provider(): an explicit provider beats the global one
        self._tracer: tuple[Any, Any] = (None, None)
        self._answer: tuple[float, Any] = (0.0, None)  # (monotonic time it holds until, the tracer or None)

    def load(self) -> Any:
        if not self.loaded:
            self.loaded = True
            try:
                from opentelemetry import context, trace
                from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
            except ImportError:  # optional: tracing is simply off
                return None
            self.api = (trace, context)
            self.propagator = TraceContextTextMapPropagator()
        return self.api

    def tracer(self) -> Any:
        """The tracer, or None when tracing is off; the global provider is looked up again
        at most every RECHECK seconds (every add and every run asks)."""
        if self.provider is None and "opentelemetry.trace" not in sys.modules and not _ENV_PROVIDER:
            return None  # nothing can have configured a provider: no import, no lookup
        until, answer = self._answer
        now = time.monotonic()
        if now < until:
            return answer
        answer = self._lookup()
        self._answer = (now + RECHECK, answer)
        return answer

    def forget(self) -> None:
        self._answer = (0.0, None)

    def _lookup(self) -> Any:
        api = self.load()
        if api is None:
            return None
        trace = api[0]
        provider = self.provider or trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None  # nobody configured tracing: no spans, no trace context stored
        cached_for, tracer = self._tracer
        if cached_for is not provider:
            tracer = provider.get_tracer("oqronkit")
            self._tracer = (provider, tracer)
        return tracer


#: A provider named in the environment, which OpenTelemetry's get_tracer_provider loads on first use.
_ENV_PROVIDER = otel_provider_named()
#: Seconds a global provider set with OpenTelemetry's own set_tracer_provider may take to be seen.
RECHECK = 1.0
_otel = _Otel()


def set_tracer_provider(provider: Any) -> None:
    """Trace with ``provider`` instead of the global one (None: the global one again)."""
    _otel.provider = provider
    _otel.forget()


def producer_span(queue: str, count: int) -> AbstractContextManager[Any]:
    """The ``send <queue>`` span around an add of ``count`` jobs (a no-op context when
    tracing is off)."""
    tracer = _otel.tracer()
    if tracer is None:
        return _NULL
    trace = _otel.api[0]
    attributes = {"messaging.system": SYSTEM, "messaging.destination.name": queue, "oqron.queue": queue,
                  "messaging.operation.type": "send", "messaging.batch.message_count": count}
    span: AbstractContextManager[Any] = tracer.start_as_current_span(
        f"send {queue}", kind=trace.SpanKind.PRODUCER, attributes=attributes)
    return span


def record_jobs(span: Any, jobs: Sequence[Job]) -> None:
    """Name the job an add made on its producer span (a batch keeps only its count)."""
    if span is not None and len(jobs) == 1:
        span.set_attributes({"messaging.message.id": jobs[0].id, "oqron.job.id": jobs[0].id})


def current_trace_context() -> dict[str, str] | None:
    """The W3C trace context of the current span (``traceparent``, and ``tracestate``
    when set), for the job being added; None when tracing is off or no span is current."""
    tracer = _otel.tracer()
    if tracer is None or not _otel.api[0].get_current_span().get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _otel.propagator.inject(carrier)
    return carrier or None


@dataclass(slots=True)
class ConsumerSpan:
    span: Any
    token: Any


def start_consumer(job: Job, run_id: str | None) -> ConsumerSpan | None:
    """Open and make current the ``process <queue>`` span of an attempt, a child of the
    span its job was added in; None when tracing is off."""
    tracer = _otel.tracer()
    if tracer is None:
        return None
    trace, context = _otel.api
    carried = job.trace_context if isinstance(job.trace_context, dict) else None
    parent = _otel.propagator.extract(carried) if carried else None
    attributes = {"messaging.system": SYSTEM, "messaging.destination.name": job.queue, "oqron.queue": job.queue,
                  "messaging.operation.type": "process", "messaging.message.id": job.id, "oqron.job.id": job.id,
                  "oqron.job.attempt": job.attempts}
    if run_id is not None:
        attributes["oqron.run.id"] = run_id
    span = tracer.start_span(f"process {job.queue}", context=parent, kind=trace.SpanKind.CONSUMER,
                             attributes=attributes)
    return ConsumerSpan(span, context.attach(trace.set_span_in_context(span)))


def end_consumer(handle: ConsumerSpan, kind: str, message: str | None, exc: BaseException | None = None) -> None:
    """Close the attempt's span with the status of an outcome of ``kind`` (ERROR, the
    error ``message`` and the exception for a failure)."""
    trace, context = _otel.api
    span, status = handle.span, _RUN_STATUS.get(kind, "failed")
    span.set_attribute("oqron.status", status)
    if status == "failed":
        span.set_status(trace.Status(trace.StatusCode.ERROR, message or kind))
        if exc is not None:
            span.record_exception(exc)
    context.detach(handle.token)
    span.end()


def start_batch(queue: str, jobs: Sequence[Job], batch_id: str) -> ConsumerSpan | None:
    """The ``process <queue>`` span of one batch handler call, linked to the span each
    job was added in (a batch has no single parent); None when tracing is off."""
    tracer = _otel.tracer()
    if tracer is None:
        return None
    trace, context = _otel.api
    links = []
    for job in jobs:
        carried = job.trace_context if isinstance(job.trace_context, dict) else None
        linked = trace.get_current_span(_otel.propagator.extract(carried)).get_span_context() if carried else None
        if linked is not None and linked.is_valid:
            links.append(trace.Link(linked, {"oqron.job.id": job.id}))
    attributes = {"messaging.system": SYSTEM, "messaging.destination.name": queue, "oqron.queue": queue,
                  "messaging.operation.type": "process", "messaging.batch.message_count": len(jobs),
                  "oqron.batch.id": batch_id}
    span = tracer.start_span(f"process {queue}", kind=trace.SpanKind.CONSUMER, attributes=attributes, links=links,
                             context=context.Context())  # a root: the links say where its jobs came from
    return ConsumerSpan(span, context.attach(trace.set_span_in_context(span)))
