"""oqronkit.contrib.django.middleware.CorrelationMiddleware: a request's traceparent,
else its X-Request-ID, else a new id is in effect in the view (sync and async), and an
id the client did not send as X-Request-ID comes back in it."""

from __future__ import annotations

import asyncio

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from oqronkit.contrib.django.middleware import CorrelationMiddleware
from oqronkit.correlation import current, current_id

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def seen_view(request):
    return HttpResponse(current_id() or "")


@pytest.mark.parametrize(("headers", "expected"), [
    ({"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01", "X-Request-ID": "req-1"}, TRACE_ID),
    ({"traceparent": "00-" + "0" * 32 + "-00f067aa0ba902b7-01", "X-Request-ID": "req-1"}, "req-1"),
    ({"traceparent": "garbage", "X-Request-ID": "req-2"}, "req-2"),
    ({"X-Request-ID": "bad\nid"}, None),
])
def test_the_id_comes_from_the_headers(headers: dict, expected: str | None):
    request = RequestFactory().get("/", headers=headers)
    response = CorrelationMiddleware(seen_view)(request)
    body = response.content.decode()
    if expected is None:  # unusable: a new id, returned to the client
        assert len(body) == 26 and response["X-Request-ID"] == body
    else:
        assert body == expected
        assert response.get("X-Request-ID") == (None if expected == headers["X-Request-ID"] else expected)
    assert current() is None  # nothing leaks out of the request


def test_a_request_without_headers_gets_a_new_id_each_time_and_sees_it_back():
    first, second = (CorrelationMiddleware(seen_view)(RequestFactory().get("/")) for _ in range(2))
    assert first.content and first.content != second.content
    assert first["X-Request-ID"] == first.content.decode()


def test_async_views_run_with_the_id_in_effect():
    async def view(request):
        await asyncio.sleep(0)
        return HttpResponse(current_id() or "")

    middleware = CorrelationMiddleware(view)
    request = RequestFactory().get("/", headers={"X-Request-ID": "async-1"})
    response = asyncio.run(middleware(request))
    assert response.content == b"async-1" and "X-Request-ID" not in response
