"""``/api/v1/operations/``: tracked bulk operations as JSON. GET lists (``?status=``,
``?cursor=``) or shows one; POST creates one (operators: ``action`` retry or delete,
with the dead letters' filters ``queue``, ``fingerprint``, ``q`` and optionally
``rendered_at``, the window's end; a delete needs ``confirmed=true``) or pauses,
resumes, cancels one. Audited with source ``api``, as the board's own pages."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse

from ..base.filters import clean_or_400
from ..base.pages import BoardRequest, scope_of
from ..views.operations import OperationForm, change_operation, create_operation, get_operation, list_operations
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
    data = clean_or_400(OperationForm(body(request)))
    op = create_operation(scope_of(request), request.user.get_username(), data, source=SOURCE)
    return JsonResponse(op.to_dict(), status=201)


@api_view("GET")
def operation_detail(request: BoardRequest, op_id: str) -> dict[str, Any]:
    return get_operation(scope_of(request), op_id).to_dict()


@api_view("POST", operator=True)
def operation_action(request: BoardRequest, op_id: str, verb: str) -> dict[str, Any]:
    """Pause, resume or cancel: 200 with the operation, 400 when its status refuses it."""
    return change_operation(scope_of(request), request.user.get_username(), op_id, verb, source=SOURCE).to_dict()
