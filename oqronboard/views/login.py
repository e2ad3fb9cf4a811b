"""The login forms (the board's and the admin's) behind the engine's rate limiters, the way
the best-guarded logins are (django-axes, GitHub): per (username, client address) pair
and per client address, never per username alone, so a guesser elsewhere cannot lock a
user out at their usual address. A refused POST gets 429 with ``Retry-After``.

- ``OQRON_LOGIN_RATE_LIMIT`` (attempts, seconds): one username from one address; a
  successful login clears that pair's count.
- ``OQRON_LOGIN_ADDRESS_RATE_LIMIT``: one address, whatever the usernames (a sprayer).

The address is the client's behind ``OQRON_TRUSTED_PROXIES`` (:mod:`oqronboard.base.addresses`).
A lockout is logged and written to the audit log once per window and key. The limiters
fail open, so a hot-plane outage never locks operators out.
"""

from __future__ import annotations

import functools
import logging
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.forms import UsernameField
from django.http import HttpRequest, HttpResponse

from oqronkit import OqronError
from oqronkit.audit import audit_entry, save_audit
from oqronkit.clock import now_ms
from oqronkit.contrib.django import engine
from oqronkit.ratelimit import Decision, RateLimiter
from oqronkit.ratelimit.django_view import too_many_requests

from ..base import conf
from ..base.addresses import address_key, client_ip

logger = logging.getLogger(__name__)
PAIR_LIMITER, ADDRESS_LIMITER, NOTICE_LIMITER = "board-login", "board-login-address", "board-login-lockouts"
LOCKOUT_ACTION = "login_lockout"
_limiters: dict[tuple[int, str, int, float], RateLimiter] = {}
_lock = threading.Lock()
# Django's login forms clean the username with this field (strip, then NFKC) before authenticating.
_USERNAME = UsernameField()
USERNAME_KEY_CHARS = 150  # Django's longest username; cutting a longer key only merges counts, never splits them


def _limiter(name: str, limit: int, period: float) -> RateLimiter:
    """The limiter ``name`` of the configured engine (built once per engine and limit)."""
    board_engine = engine.get_engine()
    key = (id(board_engine), name, int(limit), float(period))
    with _lock:
        found = _limiters.get(key)
        if found is None:
            found = _limiters[key] = RateLimiter(name, limit=int(limit), period=float(period), fail_open=True,
                                                 engine=board_engine)
    return found


def login_limiters() -> tuple[RateLimiter, RateLimiter]:
    """The (username, address) pair's limiter and the address's, as configured."""
    try:
        pair, address = conf.login_rate_limits()
    except OqronError as exc:  # `manage.py check` reports it; a typo must not switch the limits off
        logger.error("login limit: %s", exc, extra={"action": "board.login_limit_invalid"})
        pair, address = conf.LOGIN_RATE_LIMIT, conf.LOGIN_ADDRESS_RATE_LIMIT
    return _limiter(PAIR_LIMITER, *pair), _limiter(ADDRESS_LIMITER, *address)


def username_key(raw: object) -> str:
    """The username as the limiter counts it: the name Django authenticates (stripped and
    NFKC-normalised by ``UsernameField``), case-folded, so every spelling that reaches one
    account (fullwidth letters, compatibility forms, case) shares one count."""
    name = unicodedata.normalize("NFKC", str(_USERNAME.to_python(raw) or "").casefold())
    return name[:USERNAME_KEY_CHARS]


def client_address(request: HttpRequest) -> str:
    """The client's address key (behind ``OQRON_TRUSTED_PROXIES``, the forwarded one)."""
    try:
        proxies = conf.trusted_proxies()
    except OqronError as exc:  # `manage.py check` reports it; meanwhile believe no header
        logger.error("login limit: %s", exc, extra={"action": "board.login_limit_invalid"})
        proxies = ()
    return address_key(client_ip(request, proxies))


@dataclass
class Attempt:
    """One login POST: who from where, and the refusal if a limiter said no."""

    username: str
    address: str
    pair: RateLimiter
    counted: bool = False  # the pair's count holds this attempt (the hot plane answered)
    refusal: HttpResponse | None = None

    @property
    def pair_key(self) -> str:
        return f"user:{self.username}|ip:{self.address}"

    def succeeded(self) -> None:
        """Clear the pair's count: a user who mistyped, then logged in, starts afresh. The
        address's count stays, or anyone with an account could wipe it between guesses."""
        if not self.counted:
            return
        try:
            self.pair.reset(self.pair_key)
        except OqronError as exc:  # the login succeeded; a count left over only expires later
            logger.warning("login limit: could not clear %s: %s", self.pair_key, exc,
                           extra={"action": "board.login_limit_unavailable"})


def check_attempt(request: HttpRequest, source: str) -> Attempt | None:
    """Count this POST against its pair, then its address; None when the limiters are
    unavailable (a misconfigured engine: the overview says so; logging in must still work)."""
    try:
        pair, by_address = login_limiters()
        attempt = Attempt(username_key(request.POST.get("username", "")), client_address(request), pair)
        checks = [(pair, attempt.pair_key)] if attempt.username else []  # no name: Django refuses the form
        for limiter, key in [*checks, (by_address, f"ip:{attempt.address}")]:
            decision = limiter.check(key)
            if decision.failed_open:  # the hot plane is down: the next check would wait on it too
                return attempt
            attempt.counted = attempt.counted or limiter is pair
            if not decision.allowed:
                attempt.refusal = too_many_requests(limiter, decision)
                _locked_out(attempt, limiter, key, decision, source)
                return attempt
        return attempt
    except OqronError as exc:
        logger.error("login rate limit unavailable: %s", exc, extra={"action": "board.login_limit_unavailable"})
        return None


def _locked_out(attempt: Attempt, limiter: RateLimiter, key: str, decision: Decision, source: str) -> None:
    """Log the lockout and write its audit record, once per window and key (a guesser
    hammering at 429 must not flood the log it is recorded in)."""
    try:
        periods = [lim.definition.tiers[0].period_ms for lim in login_limiters()]
        if not _limiter(NOTICE_LIMITER, 1, max(periods) / 1000).check(f"{limiter.name}|{key}").allowed:
            return
    except OqronError as exc:  # the refusal stands; only its record is lost
        logger.error("login lockout not recorded: %s", exc, extra={"action": "board.login_limit_unavailable"})
        return
    whom = f"username {attempt.username!r}" if limiter is attempt.pair else "every username"
    window = decision.window // 1000
    result = (f"{whom} from {attempt.address} locked out after {decision.limit} attempts in {window} s; "
              f"retry after {decision.retry_after_seconds} s")
    logger.warning("login locked out: %s", result, extra={"action": "board.login_lockout", "limiter": limiter.name})
    config = engine.get_config()
    entry = audit_entry(at=now_ms(), user=attempt.address, action=LOCKOUT_ACTION, source=source, queue=None,
                        targets=(), ok=False, result=result, project=config.project,
                        environment=config.environment,
                        extra={"target": whom, "username": attempt.username, "address": attempt.address,
                               "limiter": limiter.name})
    save_audit(engine.get_engine(), entry, ())


def _signed_in(request: HttpRequest) -> Any:
    user = getattr(request, "user", None)
    return user.pk if user is not None and user.is_authenticated else None


def rate_limited_login(view: Callable[..., Any], *, source: str = "login") -> Callable[..., Any]:
    """``view`` with its POSTs counted (GETs, the form itself, are free); ``source`` names
    the form in a lockout's audit record."""

    @functools.wraps(view)
    def login(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if request.method != "POST":
            return view(request, *args, **kwargs)
        attempt = check_attempt(request, source)
        if attempt is not None and attempt.refusal is not None:
            return attempt.refusal
        before = _signed_in(request)
        response = view(request, *args, **kwargs)
        if attempt is not None and _signed_in(request) not in (None, before):
            attempt.succeeded()
        return response

    return login
