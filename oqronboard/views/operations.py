"""Tracked bulk operations (issue 37, item 5): the history list, one operation's page
with its progress bar (polled by htmx until it finishes), starting one over the dead
letters' filters (no 1,000-item cap: the leader's runner does it in chunks; the form
that starts any action is :mod:`.operation_new`), and pause, resume and cancel.
Operators only, audited; read and changed through the engine's
:class:`oqronkit.operations.Operations`, never the store."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from oqronboard.jobs.forms import FingerprintField, QueueField
from oqronkit.errors import InvalidState, UnknownOperation
from oqronkit.operations import DEAD_LETTER_ACTIONS, STATUSES, Operation, Operations

from ..base.audit import Action
from ..base.filters import TextFilter, clean_or_400
from ..base.pages import BadFilter, BoardRequest, board_view, scope_of
from ..base.roles import operator_required
from ..base.scope import BoardScope
from ..base.templating import render, render_to_string

LISTED = 50
VERBS = ("pause", "resume", "cancel")
NO_OPERATION = "No bulk operation with that id in this project and environment."


class OperationForm(forms.Form):
    """A new operation: the action and the dead-letter page's filters; ``rendered_at``
    (the page's render time) closes its window, so later deaths are never touched."""

    action = forms.ChoiceField(choices=[(a, a) for a in DEAD_LETTER_ACTIONS])
    queue = QueueField()
    fingerprint = FingerprintField()
    q = TextFilter()
    rendered_at = forms.IntegerField(required=False, min_value=0, max_value=2**53)
    confirmed = forms.BooleanField(required=False)
    name = TextFilter(max_length=200)  # optional: the engine names it from the filter otherwise


class ListForm(forms.Form):
    status = forms.ChoiceField(choices=[("", "any"), *((s, s) for s in STATUSES)], required=False)
    cursor = TextFilter(max_length=200)


def create_operation(scope: BoardScope, user: str, data: dict[str, Any], *, source: str = "board") -> Operation:
    """Start an operation from a cleaned :class:`OperationForm`, audited (the board's and the API's)."""
    if data["action"] == "delete" and not data["confirmed"]:
        raise BadFilter("Deleting is for good: confirm it (confirmed=true).")
    op = Operations(scope.engine).create(data["action"], user=user, source=source, queue=data["queue"],
                                         fingerprint=data["fingerprint"], search=data["q"],
                                         died_to=data["rendered_at"], name=data["name"])
    message = f"Operation {op.id} started: {op.name}, {op.planned:,} dead letter(s) to look at."
    Action(scope, user, f"operation-{op.action}", source=source, queue=data["queue"] or None,
           extra={"operation": op.id, "filter": op.filter.to_value(), "target": op.name}).save(ok=True, result=message)
    return op


def change_operation(scope: BoardScope, user: str, op_id: str, verb: str, *, source: str = "board") -> Operation:
    """Pause, resume or cancel, audited; 404 for an unknown id, 400 for a refused change."""
    if verb not in VERBS:
        raise Http404(f"Unknown operation action: use one of {', '.join(VERBS)}.")
    try:
        op = getattr(Operations(scope.engine), verb)(op_id, user=user)
    except UnknownOperation as exc:
        raise Http404(NO_OPERATION) from exc
    except InvalidState as exc:
        Action(scope, user, f"operation-{verb}", source=source, extra={"operation": op_id}).save(ok=False,
                                                                                                result=str(exc))
        raise BadFilter(str(exc)) from exc
    message = f"Operation {op_id} is {op.status}."
    Action(scope, user, f"operation-{verb}", source=source, extra={"operation": op_id, "target": op.name}).save(
        ok=True, result=message)
    return op


def get_operation(scope: BoardScope, op_id: str) -> Operation:
    try:
        return Operations(scope.engine).get(op_id)
    except UnknownOperation as exc:
        raise Http404(NO_OPERATION) from exc


def list_operations(scope: BoardScope, params: Any, *, limit: int = LISTED) -> tuple[list[Operation], str | None]:
    data = clean_or_400(ListForm(params))
    return Operations(scope.engine).list(status=data["status"] or None, limit=limit, cursor=data["cursor"] or None)


@board_view
def operations_page(request: BoardRequest) -> HttpResponse:
    """Every operation of the scope, newest first (``?status=``), live while one runs."""
    ops, cursor = list_operations(scope_of(request), request.GET)
    context = {"operations": ops, "next_cursor": cursor, "status": request.GET.get("status", ""),
               "statuses": STATUSES, "polling": any(not op.finished for op in ops)}
    if request.htmx and request.GET.get("panel") == "list":
        if context["polling"]:
            return render(request, "oqronboard/operations.html#list", context)
        return HttpResponseStopPolling(render_to_string("oqronboard/operations.html#list", context, request))
    return render(request, "oqronboard/operations.html", context)


@board_view
def operation_detail(request: BoardRequest, op_id: str) -> HttpResponse:
    """One operation; ``?panel=live`` is its progress for htmx, 286 (stop polling) once finished."""
    op = get_operation(scope_of(request), op_id)
    context = {"op": op, "counts": op.to_dict()["counts"]}
    if request.htmx and request.GET.get("panel") == "live":
        if not op.finished:
            return render(request, "oqronboard/operation.html#live", context)
        return HttpResponseStopPolling(render_to_string("oqronboard/operation.html#live", context, request))
    return render(request, "oqronboard/operation.html", context)


@require_POST
@board_view
@operator_required
def operation_action(request: BoardRequest, op_id: str, verb: str) -> HttpResponse:
    """Pause, resume or cancel an operation, then show it again."""
    op = change_operation(scope_of(request), request.user.get_username(), op_id, verb)
    if request.htmx:
        return render(request, "oqronboard/operation.html#live", {"op": op, "counts": op.to_dict()["counts"]})
    messages.success(request, f"Operation {op.id} is {op.status}.")
    return redirect(reverse("oqronboard:operation", args=[op.id]))
