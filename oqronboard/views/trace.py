"""One correlation id's timeline (issue 37, item 1): every job, run, message, log line
and audit entry that carries it, in time order, nested by cause, each row linked to its
own page. Read through the engine's API (``Engine.trace``), which the correlation
indexes serve; ``?panel=live`` re-renders the table for htmx until nothing is pending."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse
from django.urls import reverse
from django_htmx.http import HttpResponseStopPolling

from oqronboard.base.templating import render, render_to_string
from oqronkit.trace import Trace, TraceEntry

from ..base.pages import BoardRequest, board_view, scope_of

NO_TRACE = "Nothing in this project and environment carries that correlation id."
#: Statuses that will change: the page polls while one is shown.
PENDING = frozenset({"waiting", "delayed", "active", "running", "waiting-dependencies", "queued"})


@board_view
def trace_page(request: BoardRequest, correlation_id: str) -> HttpResponse:
    """The timeline page; 404 (with the jump box's message) when nothing carries the id."""
    trace = scope_of(request).engine.trace(correlation_id)
    context = trace_context(trace)
    if request.htmx and request.GET.get("panel") == "live":
        if context["polling"]:
            return render(request, "oqronboard/trace.html#live", context)
        return HttpResponseStopPolling(render_to_string("oqronboard/trace.html#live", context, request))
    return render(request, "oqronboard/trace.html", context, status=200 if trace.entries else 404)


def trace_context(trace: Trace) -> dict[str, Any]:
    start = trace.started_at or 0
    rows = [{"entry": e, "offset": e.at - start, "link": entry_link(e), "indent": min(e.depth, 12)}
            for e in trace.entries]
    return {
        "correlation_id": trace.correlation_id, "rows": rows, "trace": trace, "none_message": NO_TRACE,
        "span_ms": (trace.ended_at or start) - start, "polling": any(e.status in PENDING for e in trace.entries),
    }


def entry_link(entry: TraceEntry) -> str:
    """The URL of the entry's own page."""
    ref = entry.ref
    if entry.kind == "run":
        return reverse("oqronboard:run", args=[entry.id])
    if entry.kind in ("job", "dead", "audit"):
        return reverse("oqronboard:job", args=[ref["queue"], ref["job"]])
    if entry.kind == "message":
        return reverse("oqronboard:topic-message", args=[ref["topic"], entry.id])
    return reverse("oqronboard:logs") + "?" + urlencode({"module": ref.get("module", "")})
