"""The Django decorator and middleware: 429 with Retry-After and the IETF RateLimit
headers once a key is over its limit; the headers on allowed responses too."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from django.test import RequestFactory

from oqronkit import Engine, OqronConfig, RateLimiter, Registry
from oqronkit.ratelimit.django_view import RateLimitMiddleware, rate_limited, user_or_address


@pytest.fixture
def limiter() -> RateLimiter:
    engine = Engine(OqronConfig(mode="memory", database_url=None, project="p"), registry=Registry())
    return engine.rate_limit("login", algorithm="fixed-window", limit=2, period=60)


def _view(request):
    return HttpResponse("ok")


def test_the_decorator_answers_429_with_the_ietf_headers(limiter):
    view = rate_limited(limiter)(_view)
    factory = RequestFactory()
    first = view(factory.get("/", REMOTE_ADDR="10.0.0.1"))
    assert first.status_code == 200 and first["RateLimit-Policy"] == '"login";q=2;w=60'
    assert first["RateLimit"].startswith('"login";r=1;t=') and 0 < int(first["RateLimit"].rpartition("=")[2]) <= 60
    assert view(factory.get("/", REMOTE_ADDR="10.0.0.1")).status_code == 200
    refused = view(factory.get("/", REMOTE_ADDR="10.0.0.1"))
    assert refused.status_code == 429 and refused.content == b"Too many requests; retry later.\n"
    assert 1 <= int(refused["Retry-After"]) <= 60 and '"login";r=0;t=' in refused["RateLimit"]
    assert view(factory.get("/", REMOTE_ADDR="10.0.0.2")).status_code == 200  # another client


def test_the_decorator_limits_only_the_given_methods_and_keys_it_can_find(limiter):
    view = rate_limited(limiter, key=user_or_address, methods=frozenset({"POST"}))(_view)
    factory = RequestFactory()
    for _ in range(5):
        assert view(factory.get("/", REMOTE_ADDR="10.0.0.1")).status_code == 200
    no_address = factory.post("/")
    no_address.META.pop("REMOTE_ADDR")
    assert all(view(no_address).status_code == 200 for _ in range(3))  # nothing to count against
    assert [view(factory.post("/", REMOTE_ADDR="10.0.0.1")).status_code for _ in range(3)] == [200, 200, 429]


def test_several_tiers_are_several_policies(limiter):
    tiered = limiter.engine.rate_limit("api", limit=2, period=1, tiers=[(100, 3600)])  # type: ignore[attr-defined]
    response = rate_limited(tiered)(_view)(RequestFactory().get("/", REMOTE_ADDR="10.0.0.1"))
    assert response["RateLimit-Policy"] == '"api/1s";q=2;w=1, "api/3600s";q=100;w=3600'
    assert response["RateLimit"].startswith('"api/1s";r=1;')


def test_the_middleware_limits_every_request(limiter, settings):
    settings.OQRON_RATE_LIMIT = {"limiter": limiter}
    middleware = RateLimitMiddleware(_view)
    statuses = [middleware(RequestFactory().get("/", REMOTE_ADDR="10.0.0.9")).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


def test_the_middleware_without_a_limiter_is_a_configuration_error(settings):
    settings.OQRON_RATE_LIMIT = {}
    with pytest.raises(ImproperlyConfigured, match="needs OQRON_RATE_LIMIT"):
        RateLimitMiddleware(_view)
