"""Template context for every board page: scope, switcher, role and live settings."""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from oqronboard.definitions.queries import known_scopes
from oqronkit import OqronError

from .base import live
from .base.roles import access_of, refused_choice
from .base.scope import BoardScope


def board(request: HttpRequest) -> dict[str, Any]:
    scope: BoardScope | None = getattr(request, "scope", None)
    user = getattr(request, "user", None)
    access = access_of(request) if user is not None and user.is_authenticated else None
    interval = live.poll_interval(request)

    def scopes() -> list[BoardScope]:
        # Called only by templates that render the switcher (full pages, not fragments);
        # a scope the user may not see is never offered.
        if access is None:
            return []
        try:
            return access.visible(known_scopes(scope))
        except (OqronError, DatabaseError):
            return [scope] if scope is not None else []

    refused = scope is not None and refused_choice(request, scope) is not None
    return {
        "board_admin_url": _admin_url(user),
        "board_scope": scope,
        "board_scopes": scopes,
        # Where the session chose a scope it may no longer see, the page fell back and acts nowhere.
        "board_scope_refused": refused,
        "is_operator": bool(access and scope and not refused and access.can_operate(scope)),
        "poll_interval": interval,
        "poll_choices": live.POLL_CHOICES,
        "poll_trigger": live.poll_trigger(interval),
    }


def _admin_url(user: Any) -> str | None:
    """The project's admin for staff, when the project has one under the usual name."""
    if not (user and user.is_authenticated and user.is_staff):
        return None
    try:
        return reverse("admin:index")
    except NoReverseMatch:
        return None
