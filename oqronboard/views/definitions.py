"""The definitions page: every definition and control record of the scope, with pause
and resume for queues and removal of a stale queue record (through the engine,
audited). A queue's jobs and dead letters decide whether it exists or is stale, so the
page reads two tables and lives above the apps."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from oqronboard.base.templating import render
from oqronboard.definitions.queries import MAX_DEFINITIONS, definitions, queue_control
from oqronboard.jobs.forms import check_queue
from oqronkit.errors import InvalidState
from oqronkit.queues.records import remove_queue_record

from .. import queues
from ..base.audit import Action
from ..base.pages import BoardRequest, back, board_view, refresh_others, scope_of
from ..base.roles import operator_required
from ..base.scope import BoardScope
from .definition_rows import definition_groups

NO_QUEUE = "No queue of that name in this project and environment."


@board_view
def definitions_page(request: BoardRequest) -> HttpResponse:
    """Definitions and control state by namespace; ``?panel=list`` for the live panel.
    A queue record whose queue holds no job and no dead letter, and which no live worker
    consumes, is stale (removable)."""
    scope = scope_of(request)
    records = definitions(scope, annotate=queues.usage_annotations(scope))
    context = {"groups": definition_groups(records, queues.consumed_queues(scope)),
               "capped": len(records) >= MAX_DEFINITIONS, "limit": MAX_DEFINITIONS}
    if request.htmx and request.GET.get("panel") == "list":
        return render(request, "oqronboard/definitions/list.html#records", context)
    return render(request, "oqronboard/definitions/list.html", context)


def set_queue_paused(scope: BoardScope, user: str, queue: str, paused: bool, *, source: str = "board") -> str:
    """Pause or resume ``queue`` through the engine, audited; "paused" or "resumed".
    Http404 for a queue with no record, no job and no dead letter (the board's and the
    JSON API's)."""
    check_queue(queue)
    if not queues.queue_known(scope, queue):
        raise Http404(NO_QUEUE)
    controller = scope.queue(queue)
    controller.pause() if paused else controller.resume()
    verb = "paused" if paused else "resumed"
    Action(scope, user, "pause" if paused else "resume", source=source, queue=queue,
           extra={"target": f"queue {queue}"}).save(ok=True, result=f"Queue {queue} {verb}.")
    return verb


@require_POST
@board_view
@operator_required
def queue_pause(request: BoardRequest, queue: str, paused: bool) -> HttpResponse:
    """Pause or resume a queue cluster-wide (persisted in its control record); 404 for a
    queue with no record, no job and no dead letter (pausing it would invent one)."""
    scope = scope_of(request)
    verb = set_queue_paused(scope, request.user.get_username(), queue, paused)
    if request.htmx:
        control = queue_control(scope, queue) or {"paused": paused}
        return refresh_others(render(request, "oqronboard/definitions/_queue_control.html",
                                     {"queue": queue, "control": control, "message": f"Queue {verb}."}))
    messages.success(request, f"Queue {queue} {verb}.")
    return back(request, reverse("oqronboard:definitions"))


@require_POST
@board_view
@operator_required
def queue_remove(request: BoardRequest, queue: str) -> HttpResponse:
    """Remove a stale queue record (its queue holds no job and no dead letter and no
    live worker consumes it), through the engine; audited. 404 when there is no record."""
    scope = scope_of(request)
    if not queues.has_record(scope, queue):
        raise Http404(NO_QUEUE)
    audit = Action(scope, request.user.get_username(), "remove-queue", queue=queue,
                   extra={"target": f"queue {queue}"})
    consumed = queues.consumed_queues(scope)
    if queues.holds_jobs(scope, queue):
        ok, message = False, f"Queue {queue} still holds jobs or dead letters; its record stays."
    elif consumed is None:
        ok, message = False, f"Queue {queue}'s record stays: the hot plane cannot say if a live worker consumes it."
    elif queue in consumed:
        ok, message = False, f"Queue {queue} is consumed by a live worker; its record stays."
    else:
        try:
            ok = remove_queue_record(scope.engine, queue)
            message = f"Queue record {queue} removed." if ok else f"Queue record {queue} was already gone."
        except InvalidState as exc:
            ok, message = False, str(exc)
    audit.save(ok=ok, result=message)
    (messages.success if ok else messages.warning)(request, message)
    response = back(request, reverse("oqronboard:definitions"))
    return refresh_others(response) if request.htmx else response
