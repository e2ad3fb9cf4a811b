"""A request's correlation id for everything it enqueues, publishes or sends.

Add ``"oqronkit.contrib.django.middleware.CorrelationMiddleware"`` to ``MIDDLEWARE``:
each request runs with a correlation id in effect (:mod:`oqronkit.correlation`): the
trace id of its W3C ``traceparent`` header, else its ``X-Request-ID``, else a new id.
The response carries it back in ``X-Request-ID`` unless the request sent that id, so a client
can look up the timeline (``/trace/<id>/`` on the board, ``oqron trace <id>``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase

from ...correlation import correlate, from_headers

RESPONSE_HEADER = "X-Request-ID"


class CorrelationMiddleware:
    """Puts the request's correlation id in effect around the view (sync or async)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self.__acall__(request)
        cid = request_correlation_id(request)
        with correlate(cid) as carried:
            response = self.get_response(request)
        return _tagged(response, carried, request)

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        cid = request_correlation_id(request)
        with correlate(cid) as carried:
            response = await self.get_response(request)
        return _tagged(response, carried, request)


def request_correlation_id(request: HttpRequest) -> str | None:
    """The id a request's headers give (None: a new one is made)."""
    return from_headers(request.headers.get("traceparent"), request.headers.get("X-Request-ID"))


def _tagged(response: HttpResponseBase, carried: str, request: HttpRequest) -> HttpResponseBase:
    if RESPONSE_HEADER not in response and request.headers.get("X-Request-ID") != carried:
        response[RESPONSE_HEADER] = carried
    return response
