"""The login forms (the board's and the admin's) behind a rate limiter, per client
address and per username: a password guesser gets 429 with Retry-After. The limits are
``OQRON_LOGIN_RATE_LIMIT`` (attempts, seconds); the limiter fails open, so a hot-plane
outage never locks operators out."""

from __future__ import annotations

import functools
import logging
import threading
import unicodedata
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.forms import UsernameField
from django.http import HttpRequest, HttpResponse

from oqronkit import OqronError
from oqronkit.contrib.django import engine
from oqronkit.ratelimit import RateLimiter
from oqronkit.ratelimit.django_view import client_address, too_many_requests

logger = logging.getLogger(__name__)
DEFAULT_LIMIT = (10, 60)  # ten attempts a minute per address and per username
_limiters: dict[tuple[int, tuple[int, float]], RateLimiter] = {}
_lock = threading.Lock()
# Django's login forms clean the username with this field (strip, then NFKC) before authenticating.
_USERNAME = UsernameField()
USERNAME_KEY_CHARS = 150  # Django's longest username; cutting a longer key only merges counts, never splits them


def login_limiter() -> RateLimiter:
    """The limiter of the configured engine and setting (built once for each)."""
    limit, period = getattr(settings, "OQRON_LOGIN_RATE_LIMIT", DEFAULT_LIMIT)
    board_engine = engine.get_engine()
    key = (id(board_engine), (int(limit), float(period)))
    with _lock:
        found = _limiters.get(key)
        if found is None:
            found = _limiters[key] = RateLimiter("board-login", limit=int(limit), period=float(period),
                                                 fail_open=True, engine=board_engine)
    return found


def username_key(raw: object) -> str:
    """The username as the limiter counts it: the name Django authenticates (stripped and
    NFKC-normalised by ``UsernameField``), case-folded, so every spelling that reaches one
    account (fullwidth letters, compatibility forms, case) shares one count."""
    name = unicodedata.normalize("NFKC", str(_USERNAME.to_python(raw) or "").casefold())
    return name[:USERNAME_KEY_CHARS]


def refused(request: HttpRequest) -> HttpResponse | None:
    """A 429 when this address or the username posted has used up its attempts."""
    try:
        limiter = login_limiter()
    except OqronError as exc:  # a misconfigured engine: the overview says so; logging in must still work
        logger.error("login rate limit unavailable: %s", exc, extra={"action": "board.login_limit_unavailable"})
        return None
    username = username_key(request.POST.get("username", ""))
    for key in (f"ip:{client_address(request) or 'unknown'}", f"user:{username}" if username else None):
        if key is None:
            continue
        decision = limiter.check(key)
        if not decision.allowed:
            response: HttpResponse = too_many_requests(limiter, decision)
            return response
    return None


def rate_limited_login(view: Callable[..., Any]) -> Callable[..., Any]:
    """``view`` with its POSTs counted (GETs, the form itself, are free)."""

    @functools.wraps(view)
    def login(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if request.method == "POST":
            answer = refused(request)
            if answer is not None:
                return answer
        return view(request, *args, **kwargs)

    return login
