"""``/api/v1/operations/``: tracked bulk operations as JSON. GET lists (``?status=``,
``?cursor=``) or shows one; POST creates one (operators: ``action`` retry or delete,
with the dead letters' filters ``queue``, ``fingerprint``, ``q`` and optionally
``rendered_at``, the window's end; a delete needs ``confirmed=true``; ``replay`` with the
runs page's ``name``, ``status``, ``window`` and optionally ``last``, or with ``run_ids``
(a list of any length); ``resend`` with the
delivery log's ``webhook``, ``endpoint``, ``event``, ``status``, ``window`` and
optionally ``rendered_at``) or pauses, resumes, cancels one. Audited with source ``api``, as the board's own pages."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse

from ..base.filters import clean_or_400
from ..base.pages import BoardRequest, scope_of
from ..views.operation_targets import ReplayOperationForm, start_id_replay, start_replay, start_resend
from ..views.operations import OperationForm, change_operation, create_operation, get_operation, list_operations
from ..webhook_forms import FILTER_KEYS, delivery_filters, rendered_at
from .base import SOURCE, api_view, body


@api_view("GET", "POST")
def operation_list(request: BoardRequest) -> Any:
    """GET: a page of operations, newest first; POST: :func:`operation_create`."""
    if request.method == "POST":
        return operation_create(request)
    ops, cursor = list_operations(scope_of(request), request.GET)
    return {"results": [op.to_dict() for op in ops], "next_cursor": cursor}


@api_view("POST", operator=True)
def operation_create(request: BoardRequest) -> JsonResponse:
    """Start an operation (operators only, checked again here): 201 with it."""
    fields, scope, user = body(request), scope_of(request), request.user.get_username()
    if fields.get("action") == "replay" and fields.getlist("run_ids"):
        op = start_id_replay(scope, user, fields.getlist("run_ids"), source=SOURCE)
    elif fields.get("action") == "replay":
        op = start_replay(scope, user, clean_or_400(ReplayOperationForm(fields)), source=SOURCE)
    elif fields.get("action") == "resend":
        at = rendered_at(fields) if fields.get("rendered_at") not in (None, "") else None
        filters, data = delivery_filters(fields, rendered_at=at)
        op = start_resend(scope, user, filters, {k: data[k] for k in FILTER_KEYS if data.get(k)}, source=SOURCE)
    else:
        op = create_operation(scope, user, clean_or_400(OperationForm(fields)), source=SOURCE)
    return JsonResponse(op.to_dict(), status=201)


@api_view("GET")
def operation_detail(request: BoardRequest, op_id: str) -> dict[str, Any]:
    return get_operation(scope_of(request), op_id).to_dict()


@api_view("POST", operator=True)
def operation_action(request: BoardRequest, op_id: str, verb: str) -> dict[str, Any]:
    """Pause, resume or cancel: 200 with the operation, 400 when its status refuses it."""
    return change_operation(scope_of(request), request.user.get_username(), op_id, verb, source=SOURCE).to_dict()
