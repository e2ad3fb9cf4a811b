"""What every API view shares: who is asking (a session, or ``Authorization: Bearer
<token>`` mapped to a user, and maybe limited to scopes, by ``OQRON_API_TOKENS``), CSRF
for sessions, the scope (one the caller may see), the methods allowed, and every refusal
as JSON ``{"error": message}``: never HTML, never an unhandled 500."""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.db import DataError
from django.http import Http404, HttpRequest, JsonResponse, QueryDict
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt

from oqronboard.definitions.queries import known_scopes
from oqronkit import ConfigurationError, OqronError
from oqronkit.contrib.django import engine

from ..base import conf
from ..base.guard import unstorable
from ..base.pages import BadFilter, BoardRequest
from ..base.roles import (
    NO_SCOPE,
    VIEW_PERMISSION,
    Access,
    access_of,
    current_scope,
    is_operator,
    is_viewer,
    operate_refusal,
    refuse,
)
from ..base.scope import BoardScope
from ..base.tokens import TokenHolder, token_holders

logger = logging.getLogger(__name__)
SOURCE = "api"
SAFE_METHODS = ("GET", "HEAD")


class ApiError(Exception):
    """A refusal with its HTTP status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def error(status: int, message: str, **headers: str) -> JsonResponse:
    response = JsonResponse({"error": message}, status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def token_user(header: str) -> tuple[Any, TokenHolder]:
    """The active user ``OQRON_API_TOKENS`` maps the bearer token to, and its holder
    (the scopes it is limited to); ApiError 401 otherwise."""
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise ApiError(401, "Authorization must be 'Bearer <token>'.")
    found: TokenHolder | ValueError | None = None
    for known, holder in token_holders():
        # Compared in constant time, every entry checked: no timing tells a prefix.
        if len(known) >= conf.MIN_TOKEN_CHARS and hmac.compare_digest(known.encode(), token.encode()):
            found = holder
    if isinstance(found, ValueError):  # a malformed entry never authenticates (manage.py check names it)
        logger.error("OQRON_API_TOKENS: a token's entry is unusable: %s", found, extra={"action": "board.api_token"})
        found = None
    user = get_user_model().objects.filter(username=found.username, is_active=True).first() if found else None
    if user is None or found is None:
        raise ApiError(401, "Unknown API token.")
    return user, found


def _authenticate(request: HttpRequest) -> bool:
    """Set ``request.user`` (and a token's limited access); True when it came from a
    token (no CSRF check then)."""
    header = request.headers.get("Authorization", "")
    if header:
        request.user, holder = token_user(header)
        setattr(request, "oqron_access", Access(request.user, limit=holder.scopes))  # noqa: B010
        return True
    if not request.user.is_authenticated:
        raise ApiError(401, "Log in, or send 'Authorization: Bearer <token>'.")
    return False


def _unused(request: HttpRequest) -> JsonResponse:
    return JsonResponse({})


def _check_csrf(request: HttpRequest) -> None:
    # The board's own CSRF rule for a session's unsafe request: the X-CSRFToken header.
    refused = CsrfViewMiddleware(_unused).process_view(request, _unused, (), {})
    if refused is not None:
        raise ApiError(403, "CSRF check failed: send the csrftoken cookie's value in X-CSRFToken, "
                            "or authenticate with a bearer token.")


def _scope(request: HttpRequest, by_token: bool) -> BoardScope:
    """``?scope=project/environment`` when given (one the database knows and the caller
    may see: any other is refused as unknown), else the session's (a browser) or the
    token's default (the configured one, when it may see it)."""
    raw = request.GET.get("scope", "")
    access = access_of(request)
    if not raw:
        if not by_token:
            return current_scope(request)
        default = access.default_scope()
        if default is None:
            raise ApiError(403, NO_SCOPE + " Or pass ?scope=project/environment.")
        return default
    chosen = BoardScope.parse(raw)
    if chosen is None or not access.can_see(chosen) or chosen not in known_scopes():
        raise ApiError(400, "Unknown scope: use project/environment as the board's switcher lists them.")
    return chosen


def api_view(*methods: str, operator: bool = False) -> Callable[[Callable[..., Any]], Callable[..., JsonResponse]]:
    """An API view: ``methods`` allowed (405 otherwise), authenticated (401), one who may
    act in the scope when ``operator`` (403), CSRF for a session's POST, ``request.scope``
    set to a scope the caller may see; the view returns a JSON-ready dict (or a
    JsonResponse) and every refusal is JSON."""

    def decorate(view: Callable[..., Any]) -> Callable[..., JsonResponse]:
        @login_not_required
        @csrf_exempt
        @wraps(view)
        def wrapper(request: BoardRequest, *args: Any, **kwargs: Any) -> JsonResponse:
            try:
                return _answer(view, methods, operator, request, *args, **kwargs)
            except ApiError as exc:
                extra = {"WWW_Authenticate": "Bearer"} if exc.status == 401 else {}
                return error(exc.status, str(exc), **extra)
            except Exception:  # a bug must still answer JSON; the traceback goes to the log
                logger.exception("api view %s failed", view.__name__, extra={"action": "board.api_error"})
                return error(500, "Internal error: the board's log has the details.")

        # Read by the JSON API's reference page (docs/_hooks/tables.py).
        wrapper.api_methods = methods  # type: ignore[attr-defined]
        wrapper.api_operator = operator  # type: ignore[attr-defined]
        return wrapper

    return decorate


def _answer(view: Callable[..., Any], methods: tuple[str, ...], operator: bool, request: BoardRequest,
            *args: Any, **kwargs: Any) -> JsonResponse:
    by_token = _authenticate(request)  # first: an anonymous caller learns nothing of the routes
    allowed = (*methods, "HEAD") if "GET" in methods else methods
    if request.method not in allowed:
        return error(405, f"Method {request.method} not allowed here; use {', '.join(methods)}.",
                     Allow=", ".join(allowed))
    if not by_token and request.method not in SAFE_METHODS:
        _check_csrf(request)
    if not is_viewer(request.user):
        raise ApiError(403, f"Reading the board's API needs the {VIEW_PERMISSION} permission.")
    if operator and not is_operator(request.user):
        raise ApiError(403, "Operating the board needs the oqronboard.operate permission.")
    try:
        config = engine.get_config()
    except ConfigurationError as exc:
        raise ApiError(503, str(exc)) from exc
    if config.mode in engine.NON_SQL_MODES:
        raise ApiError(503, f"The board needs a SQL durable plane; mode {config.mode} has none.")
    try:
        engine.get_durable()
        request.scope = _scope(request, by_token)
        if operator:
            why = operate_refusal(request, request.scope, from_session=not by_token and not request.GET.get("scope"))
            if why is not None:
                raise refuse(request, request.scope, why)
        result = view(request, *args, **kwargs)
    except (BadFilter, DataError, OverflowError) as exc:
        message = str(exc) if isinstance(exc, BadFilter) else "A value the database cannot hold."
        raise ApiError(400, message) from exc
    except Http404 as exc:
        raise ApiError(404, str(exc) or "Not found.") from exc
    except PermissionDenied as exc:
        raise ApiError(403, str(exc) or "Forbidden.") from exc
    except OqronError as exc:
        logger.warning("api view %s: %s", view.__name__, exc, extra={"action": "board.engine_error"})
        raise ApiError(400 if isinstance(exc, ValueError) else 503, str(exc)) from exc
    return result if isinstance(result, JsonResponse) else JsonResponse(result)


def body(request: HttpRequest) -> QueryDict:
    """A POST's fields, from a JSON object or a form, as the board's forms read them."""
    if request.content_type != "application/json":
        return request.POST
    try:
        data = json.loads(request.body or b"{}")
    except (ValueError, RecursionError) as exc:
        raise BadFilter("The body is not valid JSON.") from exc
    if not isinstance(data, dict):
        raise BadFilter("The body must be a JSON object.")
    fields = QueryDict(mutable=True)
    for key, value in data.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict | list):
                raise BadFilter(f"{key}: a string, number or boolean (or a list of them).")
            if unstorable(str(key)) or unstorable(str(item)):
                raise BadFilter("A NUL character or a lone surrogate in the body, which no id or filter can hold.")
            fields.appendlist(str(key), "" if item is None else str(item).lower() if isinstance(item, bool)
                              else str(item))
    return fields
