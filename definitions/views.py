"""The definitions page: every definition and control record of the scope, with pause
and resume for queues (through the engine's queue API, audited)."""

from __future__ import annotations

from collections import defaultdict

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from jobs.forms import check_queue
from oqronboard.audit import Action
from oqronboard.pages import back, board_view, is_htmx, refresh_others, scope_of
from oqronboard.roles import operator_required

from .queries import MAX_DEFINITIONS, definitions, queue_control


@board_view
def definitions_page(request: HttpRequest) -> HttpResponse:
    """Definitions and control state by namespace; ``?panel=list`` for the live panel."""
    records = definitions(scope_of(request))
    grouped: dict[str, list] = defaultdict(list)
    for record in records:
        grouped[record.namespace].append(record)
    context = {"groups": sorted(grouped.items()), "capped": len(records) >= MAX_DEFINITIONS,
               "limit": MAX_DEFINITIONS}
    if is_htmx(request) and request.GET.get("panel") == "list":
        return render(request, "definitions/list.html#records", context)
    return render(request, "definitions/list.html", context)


@require_POST
@board_view
@operator_required
def queue_pause(request: HttpRequest, queue: str, paused: bool) -> HttpResponse:
    """Pause or resume a queue cluster-wide (persisted in its control record)."""
    check_queue(queue)
    scope = scope_of(request)
    controller = scope.queue(queue)
    controller.pause() if paused else controller.resume()
    verb = "paused" if paused else "resumed"
    Action(scope, request.user.get_username(), "pause" if paused else "resume", queue=queue,
           extra={"target": f"queue {queue}"}).save(ok=True, result=f"Queue {queue} {verb}.")
    if is_htmx(request):
        control = queue_control(scope, queue) or {"paused": paused}
        return refresh_others(render(request, "definitions/_queue_control.html",
                                     {"queue": queue, "control": control, "message": f"Queue {verb}."}))
    messages.success(request, f"Queue {queue} {verb}.")
    return back(request, reverse("definitions"))
