"""Django glue for rate limiters: a view decorator and a middleware that answer 429 with
``Retry-After`` and the IETF ``RateLimit-Policy``/``RateLimit`` headers
(draft-ietf-httpapi-ratelimit-headers), and add those headers to allowed responses too.
Nothing in the engine imports this module."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from ..clock import now_ms
from .limiter import Decision, RateLimiter

KeyFunc = Callable[[Any], "str | None"]


def client_address(request: Any) -> str | None:
    """The peer address Django saw (behind a proxy, pass your own ``key``)."""
    address = request.META.get("REMOTE_ADDR")
    return str(address) if address else None


def user_or_address(request: Any) -> str | None:
    """The signed-in user's id, else the client address."""
    user = getattr(request, "user", None)
    if user is not None and getattr(user, "is_authenticated", False):
        return f"user:{user.pk}"
    address = client_address(request)
    return None if address is None else f"ip:{address}"


def _sf_string(text: str) -> str:
    """``text`` as a Structured Field string (RFC 8941): printable ASCII, quoted."""
    safe = "".join(ch if " " <= ch <= "~" else "?" for ch in text)
    return '"' + safe.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _policy_name(limiter: RateLimiter, period_ms: int) -> str:
    tiers = limiter.definition.tiers
    return limiter.name if len(tiers) == 1 else f"{limiter.name}/{math.ceil(period_ms / 1000)}s"


def rate_headers(limiter: RateLimiter, decision: Decision) -> dict[str, str]:
    """``RateLimit-Policy`` (every tier) and ``RateLimit`` (the binding tier) for ``decision``;
    plus ``Retry-After`` when it was refused."""
    policies = ", ".join(
        f"{_sf_string(_policy_name(limiter, tier.period_ms))};q={tier.limit};w={math.ceil(tier.period_ms / 1000)}"
        for tier in limiter.definition.tiers)
    headers = {"RateLimit-Policy": policies}
    if not decision.failed_open:
        reset = max(0, math.ceil((decision.reset - now_ms()) / 1000))
        headers["RateLimit"] = (f"{_sf_string(_policy_name(limiter, decision.window))};"
                                f"r={max(0, decision.remaining)};t={reset}")
    if not decision.allowed:
        headers["Retry-After"] = str(max(1, decision.retry_after_seconds))
    return headers


def too_many_requests(limiter: RateLimiter, decision: Decision) -> Any:
    """The 429 response for a refused ``decision``."""
    from django.http import HttpResponse  # only ever called inside a Django project

    response = HttpResponse("Too many requests; retry later.\n", status=429, content_type="text/plain")
    for name, value in rate_headers(limiter, decision).items():
        response[name] = value
    return response


def _apply(limiter: RateLimiter, key: KeyFunc, cost: int, request: Any,
           call: Callable[[], Any]) -> Any:
    found = key(request)
    if found is None:  # no key to count against: not limited
        return call()
    decision = limiter.check(found, cost)
    if not decision.allowed:
        return too_many_requests(limiter, decision)
    response = call()
    for name, value in rate_headers(limiter, decision).items():
        response[name] = value
    return response


def rate_limited(limiter: RateLimiter, *, key: KeyFunc = client_address, cost: int = 1,
                 methods: frozenset[str] | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@rate_limited(limiter, key=user_or_address)`` over a view: a refused request
    gets 429 and the view never runs. ``methods`` limits only those HTTP methods."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def view(request: Any, *args: Any, **kwargs: Any) -> Any:
            if methods is not None and request.method not in methods:
                return fn(request, *args, **kwargs)
            return _apply(limiter, key, cost, request, lambda: fn(request, *args, **kwargs))

        return view

    return decorate


class RateLimitMiddleware:
    """Limits every request by a limiter named in settings: ``OQRON_RATE_LIMIT =
    {"limiter": <RateLimiter>, "key": <callable>}`` (key defaults to the client address).
    Subclass and set ``limiter``/``key`` to configure it in code instead."""

    limiter: RateLimiter | None = None
    key: KeyFunc | None = None

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        from django.conf import settings  # only ever built inside a Django project

        self.get_response = get_response
        options = getattr(settings, "OQRON_RATE_LIMIT", {}) or {}
        self._limiter = self.limiter or options.get("limiter")
        self._key: KeyFunc = self.key or options.get("key") or client_address
        if not isinstance(self._limiter, RateLimiter):
            from django.core.exceptions import ImproperlyConfigured

            raise ImproperlyConfigured("RateLimitMiddleware needs OQRON_RATE_LIMIT = {'limiter': <RateLimiter>} "
                                       "or a subclass that sets limiter.")

    def __call__(self, request: Any) -> Any:
        limiter = self._limiter
        assert isinstance(limiter, RateLimiter)
        return _apply(limiter, self._key, 1, request, lambda: self.get_response(request))
