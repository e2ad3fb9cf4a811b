"""Viewers and operators: the ``operators`` group and the checks every action makes."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from .models import OPERATE_PERMISSION, OPERATORS_GROUP


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


def ensure_operators_group(using: str = "default", **kwargs: Any) -> None:
    """Create the ``operators`` group holding ``oqronboard.operate`` (post_migrate).

    The permission is created here too, so the order of post_migrate receivers does
    not matter."""
    from django.contrib.auth.models import Group, Permission
    from django.contrib.contenttypes.models import ContentType

    from .models import Board

    content_type = ContentType.objects.db_manager(using).get_for_model(Board, for_concrete_model=False)
    codename = OPERATE_PERMISSION.split(".", 1)[1]
    permission, _ = Permission.objects.using(using).get_or_create(
        content_type=content_type, codename=codename,
        defaults={"name": dict(Board._meta.permissions)[codename]},
    )
    group, _ = Group.objects.using(using).get_or_create(name=OPERATORS_GROUP)
    group.permissions.add(permission)
