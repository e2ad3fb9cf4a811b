"""What every board view shares: the login, permission and SQL-plane checks, the
request's scope, bad filters answered with 400, and the htmx response helpers.

A board view is ``@board_view`` and, when it changes state, also ``@require_POST`` and
``@operator_required`` (:mod:`oqronboard.base.roles`). Anonymous users go to the
project's ``LOGIN_URL``; a user without ``oqronboard.view_board`` gets 403, and so does
one who may see no scope (a page that says so and offers those it may pick). None of it
relies on a middleware: a host project's board is as closed as the standalone one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import trigger_client_event
from django_htmx.middleware import HtmxDetails

from oqronkit import ConfigurationError, OqronError
from oqronkit.contrib.django import engine

from .roles import VIEW_PERMISSION, NoScopeGranted, current_scope, is_viewer
from .scope import BoardScope
from .templating import render

logger = logging.getLogger(__name__)
REFRESH_EVENT = "board:refresh"


class BadFilter(ValueError):
    """A filter, cursor or form value the board cannot use: answered with 400."""


class BoardRequest(HttpRequest):
    """A request as a board view gets it (for type checking only: never instantiated):
    django-htmx's middleware set ``htmx`` and :func:`board_view` set ``scope``."""

    htmx: HtmxDetails
    scope: BoardScope


def board_view(view: Callable[..., HttpResponseBase] | None = None, *, needs_sql: bool = True,
               needs_scope: bool = True) -> Any:
    """Decorate a board view: a login (else the project's login page) and
    ``oqronboard.view_board`` (else 403), the engine configured, a SQL durable plane
    (unless ``needs_sql=False``), ``request.scope`` set to a scope the user may see
    (else 403; ``needs_scope=False``: None), and :class:`BadFilter` answered with 400
    and its message instead of a 500."""

    def decorate(fn: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
        @wraps(fn)
        def wrapper(request: BoardRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not is_viewer(request.user):
                raise PermissionDenied(f"Viewing the board needs the {VIEW_PERMISSION} permission.")
            try:
                config = engine.get_config()
            except ConfigurationError as exc:
                return render(request, "oqronboard/not_ready.html", {"problem": str(exc)}, status=503)
            if needs_sql and config.mode in engine.NON_SQL_MODES:
                return render(request, "oqronboard/needs_sql.html", {"config": config})
            try:
                request.scope = current_scope(request)
            except NoScopeGranted as exc:
                if needs_scope:
                    return render(request, "oqronboard/no_scope.html", {"problem": str(exc)}, status=403)
                request.scope = None  # type: ignore[assignment]  # the switcher, which picks one
            try:
                if needs_sql:
                    engine.get_durable()  # opened once per process: creates the tables on first use
                return fn(request, *args, **kwargs)
            except BadFilter as exc:
                return bad_request(request, str(exc))
            except OqronError as exc:
                # The engine refused bad input (400) or a backend is down (503): say so, never 500.
                logger.warning("board view %s: %s", fn.__name__, exc, extra={"action": "board.engine_error"})
                if isinstance(exc, ValueError):
                    return bad_request(request, str(exc))
                return render(request, "oqronboard/not_ready.html", {"problem": str(exc)}, status=503)

        return wrapper

    return decorate(view) if view is not None else decorate


def scope_of(request: BoardRequest) -> BoardScope:
    return request.scope


def bad_request(request: HttpRequest, message: str) -> HttpResponse:
    # getattr: a request built without the middleware stack (a unit test) has no .htmx.
    template = "oqronboard/bad_request.html#message" if getattr(request, "htmx", False) else \
        "oqronboard/bad_request.html"
    return render(request, template, {"message": message}, status=400)


def refresh_others(response: HttpResponse) -> HttpResponse:
    """Tell every live panel of the page to refresh now (after an action)."""
    return trigger_client_event(response, REFRESH_EVENT)


def safe_next(request: HttpRequest, fallback: str) -> str:
    """The form's ``next`` when it is a safe local URL, else ``fallback``."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
        return target
    return fallback


def back(request: HttpRequest, fallback: str) -> HttpResponse:
    """Redirect to the form's ``next`` when it is a safe local URL, else ``fallback``."""
    # A URL, never a view name: redirect() would try to reverse a `next` such as "NaN".
    return HttpResponseRedirect(safe_next(request, fallback))
