"""What every board response promises, whatever middleware the host project runs.

:func:`guarded` wraps every view of ``oqronboard.urls`` (``tests/board/test_mounting.py``
walks them): a request holding text no database can store is a 400 before the view
runs, a value the database refuses is a 400 instead of a 500, ``request.htmx`` is set
even without django-htmx's middleware, and the response carries the board's own
Content-Security-Policy, ``Cache-Control: no-store`` (pages show operational data),
``X-Frame-Options: DENY``, ``nosniff`` and a same-origin referrer policy. A header the
host's middleware sets later is kept where ours is already there (Django's CSP and
clickjacking middleware never overwrite one).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any

from django.db import DataError
from django.http import HttpRequest, HttpResponseBadRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.utils.cache import patch_cache_control
from django.utils.csp import CSP, build_policy
from django_htmx.middleware import HtmxDetails

logger = logging.getLogger(__name__)
BAD_TEXT = "Bad request: a NUL character or a lone surrogate in the {where}, which no id or filter can hold.\n"
#: No inline script or style anywhere: the board's JavaScript and CSS are static files,
#: htmx's own indicator <style> is switched off (oqronboard/base.html, htmx-config).
POLICY = build_policy({
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
})
HEADERS = {
    str(CSP.HEADER_ENFORCE): POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
View = Callable[..., HttpResponseBase]


def unstorable(text: str) -> bool:
    """True when ``text`` holds a NUL or a lone surrogate."""
    if "\x00" in text:
        return True
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _any_unstorable(pairs: Iterable[tuple[str, list[str]]]) -> bool:
    return any(unstorable(key) or any(unstorable(str(v)) for v in values) for key, values in pairs)


def hostile_part(request: HttpRequest) -> str | None:
    """Which part of ``request`` holds unstorable text, or None."""
    if unstorable(request.path) or unstorable(request.path_info):
        return "path"
    if _any_unstorable(request.GET.lists()):
        return "query string"
    if _any_unstorable((k, [v]) for k, v in request.COOKIES.items()):
        return "cookies"
    if request.method == "POST" and _any_unstorable(request.POST.lists()):
        return "form"
    return None


def refusal(request: HttpRequest, where: str, *, json: bool) -> HttpResponseBase:
    """The 400 for unstorable text: JSON for the API; plain text where the board's page
    would echo the path or read the session; else the board's page with the message."""
    message = BAD_TEXT.format(where=where)
    if json:
        return JsonResponse({"error": message.strip()}, status=400)
    if where in ("path", "cookies"):
        return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
    from .pages import bad_request

    return bad_request(request, message.strip())


def secure(response: HttpResponseBase) -> HttpResponseBase:
    """The board's headers on ``response`` (any already set stay), and no caching."""
    for header, value in HEADERS.items():
        if header not in response:
            response[header] = value
    patch_cache_control(response, no_store=True)
    return response


def guarded(view: View, *, json: bool = False) -> View:
    """``view`` with the promises above; ``json`` answers its 400s in JSON (the API)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not hasattr(request, "htmx"):
            request.htmx = HtmxDetails(request)  # type: ignore[attr-defined]
        where = hostile_part(request)
        if where is not None:
            return secure(refusal(request, where, json=json))
        try:
            response = view(request, *args, **kwargs)
        except (DataError, OverflowError) as exc:
            logger.warning("%s %s: the database refused a value: %s", request.method, request.path, exc,
                           extra={"action": "board.bad_value"})
            response = (JsonResponse({"error": "a value the database cannot hold"}, status=400) if json else
                        HttpResponseBadRequest("Bad request: a value the database cannot hold.\n",
                                               content_type="text/plain; charset=utf-8"))
        return secure(response)

    wrapper.oqron_guarded = True  # type: ignore[attr-defined]
    return wrapper
