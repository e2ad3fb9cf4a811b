"""Run pages: the run list (and the failed-runs list) and a run's live panel. Run detail,
which also reads the run's job, is a shell page (:mod:`oqronboard.views.runs`)."""

from __future__ import annotations

from typing import cast
from urllib.parse import urlencode

from django import forms
from django.http import Http404, HttpResponse
from django_htmx.http import HttpResponseStopPolling

from oqronboard.base.filters import WINDOWS
from oqronboard.base.pages import BoardRequest, board_view, scope_of
from oqronboard.base.templating import render, render_to_string
from oqronkit import OqronError
from oqronkit.clock import now_ms
from oqronkit.live import read_run

from .forms import RunFilterForm, run_filters
from .queries import get_run, run_list


@board_view
def runs(request: BoardRequest) -> HttpResponse:
    """Every run in the window, newest first, with the filters as GET parameters."""
    return _list(request, failed=False)


@board_view
def failed_runs(request: BoardRequest) -> HttpResponse:
    """The incident view: failed runs only, newest first."""
    return _list(request, failed=True)


def _list(request: BoardRequest, *, failed: bool) -> HttpResponse:
    filters, data = run_filters(request.GET, status="failed" if failed else None)
    rows, next_cursor = run_list(scope_of(request), filters)
    query = {k: v for k, v in request.GET.items() if k != "cursor" and v}
    context = {
        "rows": rows, "filters": data, "failed": failed,
        "next_query": urlencode({**query, "cursor": next_cursor}) if next_cursor else "",
        "page_title": "Failed runs" if failed else "Runs",
        "status_choices": cast(forms.ChoiceField, RunFilterForm.base_fields["status"]).choices,
        "module_choices": cast(forms.ChoiceField, RunFilterForm.base_fields["module"]).choices,
        "windows": list(WINDOWS),
        "rendered_at": now_ms(),
    }
    if request.htmx and filters.cursor is not None:
        return render(request, "oqronboard/runs/list.html#rows", context)  # "load more": just the next rows
    return render(request, "oqronboard/runs/list.html", context)


def run_or_404(request: BoardRequest, run_id: str):
    run = get_run(scope_of(request), run_id)
    if run is None:
        raise Http404("No run with this id in this project and environment.")
    return run


@board_view
def run_live(request: BoardRequest, run_id: str) -> HttpResponse:
    """The live panel of a run: progress and latest logs while it runs; once it ended,
    its final state with status 286 so htmx stops polling."""
    run = run_or_404(request, run_id)
    value = run.value if isinstance(run.value, dict) else {}
    context = {"run": value, "run_id": run.id, "ended_live": True, "live_poll": True,
               **live_context(request, run.id, value)}
    if context["running"]:
        return render(request, "oqronboard/runs/detail.html#live", context)
    return HttpResponseStopPolling(render_to_string("oqronboard/runs/detail.html#live", context, request))


def live_context(request: BoardRequest, run_id: str, value: dict) -> dict:
    """Progress, label and recent logs: the hot plane's overlay when the worker
    published one (fresher), the durable record otherwise."""
    running = value.get("status") == "running"
    progress, label, logs = value.get("progressPercent"), value.get("progressLabel"), value.get("logs") or []
    overlay_error = ""
    if running:
        try:
            overlay = read_run(scope_of(request).engine.hot, run_id)
        except OqronError as exc:
            overlay, overlay_error = None, str(exc)
        if overlay is not None:
            progress = overlay.get("progressPercent", progress)
            label = overlay.get("progressLabel") or label
            logs = overlay.get("logs") or logs
    if not running and value.get("status") == "completed":
        progress = 100
    try:
        percent = max(0.0, min(100.0, float(progress or 0)))
    except (TypeError, ValueError):
        percent = 0.0
    started = value.get("startedAt")
    elapsed = now_ms() - int(started) if running and isinstance(started, int | float) else None
    return {"running": running, "percent": round(percent, 1), "progress_label": label,
            "has_progress": running or percent > 0, "elapsed": elapsed,
            "live_logs": logs[-20:] if isinstance(logs, list) else [], "overlay_error": overlay_error}
