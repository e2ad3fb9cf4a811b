"""Template context for every board page: scope, switcher, role and live settings."""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from oqronboard.definitions.queries import known_scopes
from oqronkit import OqronError

from .base import live
from .base.roles import is_operator
from .base.scope import BoardScope


def board(request: HttpRequest) -> dict[str, Any]:
    scope: BoardScope | None = getattr(request, "scope", None)
    interval = live.poll_interval(request)

    def scopes() -> list[BoardScope]:
        # Called only by templates that render the switcher (full pages, not fragments).
        try:
            return known_scopes(scope)
        except (OqronError, DatabaseError):
            return [scope] if scope is not None else []

    return {
        "board_admin_url": _admin_url(getattr(request, "user", None)),
        "board_scope": scope,
        "board_scopes": scopes,
        "is_operator": is_operator(getattr(request, "user", None)),
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
