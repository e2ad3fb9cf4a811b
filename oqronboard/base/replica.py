"""The board's optional read replica (docs/how-to/scale-out.md).

With ``OQRON_READ_DATABASE_URL`` set, ``settings.py`` adds the alias
``OQRON_READ_DATABASE_ALIAS`` and this module routes reads of the durable tables
(the unmanaged models of :mod:`oqronboard.base.records`) to it, per request:

- only for GET, HEAD and OPTIONS: an action (any other method) reads and writes the
  primary, and so do audit, sessions, logins and everything the engine does (the
  engine knows only the primary's URL);
- not for ``OQRON_READ_PIN_SECONDS`` (default 5) after the same browser performed an
  action: a cookie pins it to the primary, so the page the action redirects to shows
  the action, not the replica's view of a moment ago;
- not while the replica is unreachable or lags more than
  ``OQRON_READ_REPLICA_MAX_LAG_SECONDS`` (default 30): the page reads the primary and
  says so in a banner;
- and when the replica fails in the middle of a page, the page is rendered again on
  the primary (a GET has no side effect), with the banner, never a 500.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from math import ceil
from typing import Any

from django.conf import settings
from django.core import checks
from django.db import InterfaceError, OperationalError
from django.db.models import Model
from django.http import HttpRequest, HttpResponse

from . import conf
from .records import READ_ROUTE, DurableManager, durable_alias, read_alias
from .replica_lag import ReplicaStatus, mark_down, max_lag_seconds, replica_status

logger = logging.getLogger(__name__)

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
PIN_COOKIE = "oqron_primary_until"


def read_database_alias() -> str | None:
    """The replica's alias, or None when the board has no read replica."""
    return conf.read_database_alias()


def pin_seconds() -> float:
    return conf.read_pin_seconds()


@dataclass(frozen=True)
class ReadRoute:
    """Where one request reads the durable tables, and why (the templates show it)."""

    alias: str
    # The replica's status when it was considered; None without a replica, for an action or a pin.
    replica: ReplicaStatus | None = None
    # Why a replica that exists is not read: the banner's text ("" when none is due).
    banner: str = ""
    pinned: bool = False

    @property
    def on_replica(self) -> bool:
        return self.replica is not None and self.alias == self.replica.alias


def pinned(request: HttpRequest, now: float | None = None) -> bool:
    """True while the pin cookie of this browser's last action has not expired."""
    raw = request.COOKIES.get(PIN_COOKIE, "")
    try:
        until = float(raw)
    except ValueError:
        return False
    return until > (time.time() if now is None else now)


def route_for(request: HttpRequest) -> ReadRoute:
    """Choose the alias this request reads the durable tables from."""
    primary = durable_alias()
    replica = read_database_alias()
    if replica is None or request.method not in SAFE_METHODS:
        return ReadRoute(primary)
    if pinned(request):
        return ReadRoute(primary, pinned=True)
    status = replica_status(replica, primary)
    if not status.reachable:
        return ReadRoute(primary, status, banner=down_banner(status))
    limit = max_lag_seconds()
    if status.too_far_behind(limit):
        return ReadRoute(primary, status, banner=lag_banner(status, limit))
    return ReadRoute(replica, status)


def down_banner(status: ReplicaStatus) -> str:
    # The driver's message (hosts, ports) goes to the log, not to every viewer.
    return "The read replica is unavailable; this page reads the primary database."


def lag_banner(status: ReplicaStatus, limit: float) -> str:
    if status.lag_seconds is None:
        why = status.error or "its lag is unknown"
        return f"The read replica's lag cannot be measured ({why}); this page reads the primary database."
    return (f"The read replica lags {status.lag_seconds:.1f} s behind the primary (more than {limit:g} s); "
            "this page reads the primary database.")


def is_durable(model: type[Model]) -> bool:
    """The engine's tables, read through the board's unmanaged models."""
    return isinstance(getattr(model, "_default_manager", None), DurableManager)


class ReadReplicaRouter:
    """Reads of the durable tables go where the request's route says; nothing is ever
    migrated on the replica (it is read-only, and a test run must not create a database there)."""

    def db_for_read(self, model: type[Model], **hints: Any) -> str | None:
        return read_alias() if is_durable(model) else None

    def db_for_write(self, model: type[Model], **hints: Any) -> str | None:
        return durable_alias() if is_durable(model) else None

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool | None:
        return False if db == read_database_alias() else None


class RequestRoute:
    """A request's read route, chosen on its first read of the durable tables: a page
    that reads none of them (a health probe, the login form) never asks the replica.
    The templates read it as ``request.oqron_read``."""

    # A template reads its properties; calling it there would choose a route for nothing.
    do_not_call_in_templates = True

    def __init__(self, request: HttpRequest) -> None:
        self._request = request
        self.route: ReadRoute | None = None

    def __call__(self) -> str:
        if self.route is None:
            self.route = route_for(self._request)
        return self.route.alias

    def fall_back(self, status: ReplicaStatus) -> None:
        """Read the primary from now on, and say why."""
        self.route = ReadRoute(durable_alias(), status, banner=down_banner(status))

    @property
    def on_replica(self) -> bool:
        return self.route is not None and self.route.on_replica

    @property
    def configured(self) -> bool:
        """True once this request read the durable tables with a replica configured."""
        return self.route is not None and read_database_alias() is not None

    @property
    def banner(self) -> str:
        return self.route.banner if self.route is not None else ""

    @property
    def pinned(self) -> bool:
        return self.route is not None and self.route.pinned

    @property
    def replica(self) -> ReplicaStatus | None:
        return self.route.replica if self.route is not None else None


class ReadReplicaMiddleware:
    """Routes a request's reads, pins a browser to the primary after an action and
    renders a page again on the primary when the replica fails under it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if read_database_alias() is None:
            return self.get_response(request)
        route = RequestRoute(request)
        request.oqron_read = route  # type: ignore[attr-defined]
        token = READ_ROUTE.set(route)
        try:
            response = self.get_response(request)
        finally:
            READ_ROUTE.reset(token)
        if request.method not in SAFE_METHODS and pin_seconds() > 0:
            pin = pin_seconds()
            response.set_cookie(PIN_COOKIE, f"{time.time() + pin:.3f}", max_age=ceil(pin), httponly=True,
                                samesite="Lax", secure=bool(getattr(settings, "SESSION_COOKIE_SECURE", False)))
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        route: RequestRoute | None = getattr(request, "oqron_read", None)
        if route is None or not route.on_replica or not isinstance(exception, OperationalError | InterfaceError):
            return None
        match = request.resolver_match
        if match is None:
            return None
        status = mark_down(read_database_alias() or "", exception)
        logger.warning("%s %s: the read replica failed (%s); rendering again on the primary", request.method,
                       request.path, status.error, extra={"action": "board.replica_retry"})
        route.fall_back(status)
        response: HttpResponse = match.func(request, *match.args, **match.kwargs)
        return response


@checks.register("oqron")
def check_read_replica(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``oqron.E020`` when ``OQRON_READ_DATABASE_URL`` is set but names no PostgreSQL
    database the board could read, or the durable plane itself is not PostgreSQL."""
    import os

    from .conf import READ_URL_VARIABLE

    url = os.environ.get(READ_URL_VARIABLE, "").strip()
    alias = read_database_alias()
    if not url and alias is None:
        return []
    hint = "Set OQRON_READ_DATABASE_URL to a postgresql:// URL of a streaming replica (docs/how-to/scale-out.md)."
    if alias is None or alias not in settings.DATABASES:
        return [checks.Error(f"{READ_URL_VARIABLE} is set but is not a postgresql:// URL; the board "
                             "ignores it.", hint=hint, id="oqron.E020")]
    vendors = {settings.DATABASES[a].get("ENGINE", "") for a in (alias, durable_alias()) if a in settings.DATABASES}
    if any("postgresql" not in v for v in vendors):
        return [checks.Error("A read replica needs PostgreSQL on both sides: the durable plane's database "
                             "and OQRON_READ_DATABASE_URL.", hint=hint, id="oqron.E020")]
    return []
