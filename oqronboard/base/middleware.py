"""Three promises kept for every view in one place, the admin included:

- a request whose path, query, form fields or cookies hold a NUL character or a lone
  surrogate is answered 400 before any view runs (no database stores such text:
  PostgreSQL raises ``DataError``, a driver cannot encode a surrogate);
- a value a database refuses (``DataError``: out of range, or an ``OverflowError`` on
  a huge integer) that slipped past a form, Django's own admin forms included, is a
  400, not a 500;
- a response carries ``Cache-Control: no-store`` (pages show operational data). Static
  files never get here: WhiteNoise, earlier in ``MIDDLEWARE``, serves them with their
  own caching.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from django.db import DataError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.utils.cache import patch_cache_control

from .pages import bad_request

logger = logging.getLogger(__name__)
# The JSON API answers JSON, even before its views run.
API_PREFIX = "/api/"
BAD_TEXT = "Bad request: a NUL character or a lone surrogate in the {where}, which no id or filter can hold.\n"


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


class BoardRequestMiddleware:
    """400 for unstorable input and refused values; ``Cache-Control: no-store`` on every response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        where = hostile_part(request)
        if where is not None and request.path_info.startswith(API_PREFIX):
            response: HttpResponse = JsonResponse({"error": BAD_TEXT.format(where=where).strip()}, status=400)
        elif where in ("path", "cookies"):
            # Plain text: the board's page would echo the path and read the session.
            response = HttpResponseBadRequest(BAD_TEXT.format(where=where),
                                                            content_type="text/plain; charset=utf-8")
        elif where is not None:
            response = bad_request(request, BAD_TEXT.format(where=where).strip())
        else:
            response = self.get_response(request)
        patch_cache_control(response, no_store=True)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, DataError | OverflowError):
            logger.warning("%s %s: the database refused a value: %s", request.method, request.path, exception,
                           extra={"action": "board.bad_value"})
            return HttpResponseBadRequest("Bad request: a value the database cannot hold.\n",
                                          content_type="text/plain; charset=utf-8")
        return None
