"""Viewers and operators: the ``view_board`` and ``operate`` permissions, the standalone
project's group names and the checks every page and action makes (the groups themselves
are made by :mod:`oqronboard.models`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

VIEW_PERMISSION = "oqronboard.view_board"
OPERATE_PERMISSION = "oqronboard.operate"
METRICS_PERMISSION = "oqronboard.view_metrics"
VIEWERS_GROUP = "viewers"
OPERATORS_GROUP = "operators"


def is_viewer(user: Any) -> bool:
    """Whether ``user`` may see the board's pages and read its API (superusers may)."""
    return bool(user and user.is_authenticated and user.has_perm(VIEW_PERMISSION))


def is_operator(user: Any) -> bool:
    """Whether ``user`` may change state through the board (superusers may)."""
    return bool(user and user.is_authenticated and user.has_perm(OPERATE_PERMISSION))


def operator_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """403 for anyone without ``oqronboard.operate``, whatever the template showed."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_operator(request.user):
            raise PermissionDenied("Operating the board needs the oqronboard.operate permission.")
        return view(request, *args, **kwargs)

    return wrapper

