"""The standalone project's middleware: the board's promises (:mod:`.guard`) on every
response it serves, the admin's and the login page's included, which ``oqronboard.urls``
does not wrap. In a host project the board's own views keep them without it."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import DataError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.http.response import HttpResponseBase

from .guard import hostile_part, refusal, secure

logger = logging.getLogger(__name__)
# The standalone project mounts the board at its root: its JSON API answers JSON here too.
API_PREFIX = "/api/"


class BoardRequestMiddleware:
    """400 for unstorable input and refused values; the board's headers on every response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        where = hostile_part(request)
        if where is not None:
            return secure(refusal(request, where, json=request.path_info.startswith(API_PREFIX)))
        return secure(self.get_response(request))

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, DataError | OverflowError):
            logger.warning("%s %s: the database refused a value: %s", request.method, request.path, exception,
                           extra={"action": "board.bad_value"})
            return HttpResponseBadRequest("Bad request: a value the database cannot hold.\n",
                                          content_type="text/plain; charset=utf-8")
        return None
