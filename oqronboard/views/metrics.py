"""``/metrics``: the board's Prometheus gauges (:mod:`oqronboard.metrics`) for the
configured scope.

Who may scrape: a request with ``Authorization: Bearer <OQRON_METRICS_TOKEN>`` (for
Prometheus), or a logged-in user holding ``oqronboard.view_metrics``. Anyone else gets
401 (no credentials, or a wrong token) or 403 (logged in without the permission), and
never a figure.
"""

from __future__ import annotations

import hmac
import logging

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from oqronkit import ConfigurationError, OqronError
from oqronkit.contrib.django import engine

from ..base import conf
from ..base.conf import MIN_TOKEN_CHARS
from ..base.roles import METRICS_PERMISSION
from ..base.scope import configured_scope

logger = logging.getLogger(__name__)


def _refusal(status: int, message: str) -> HttpResponse:
    response = HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


def _token_ok(header: str) -> bool:
    scheme, _, token = header.partition(" ")
    expected = conf.metrics_token()
    if scheme.lower() != "bearer" or len(expected) < MIN_TOKEN_CHARS:
        return False
    return hmac.compare_digest(expected.encode(), token.strip().encode())


def refusal(request: HttpRequest) -> HttpResponse | None:
    """The 401 or 403 this request gets, or None when it may scrape."""
    header = request.headers.get("Authorization", "")
    if header:
        return None if _token_ok(header) else _refusal(401, "Unknown metrics token.")
    if not request.user.is_authenticated:
        return _refusal(401, "Send 'Authorization: Bearer <OQRON_METRICS_TOKEN>', or log in.")
    if not request.user.has_perm(METRICS_PERMISSION):
        return _refusal(403, f"Scraping the metrics needs the {METRICS_PERMISSION} permission.")
    return None


@login_not_required
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The gauges in Prometheus' text format, computed now."""
    refused = refusal(request)
    if refused is not None:
        return refused
    try:
        config = engine.get_config()
        if config.mode in engine.NON_SQL_MODES:
            return _refusal(503, f"The board's metrics need a SQL durable plane; mode {config.mode} has none.")
        engine.get_durable()
    except (ConfigurationError, OqronError) as exc:
        logger.warning("metrics: the engine is not ready: %s", exc, extra={"action": "board.metrics_failed"})
        return _refusal(503, "The engine is not ready: the board's log has the reason.")
    try:
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

        from ..metrics import BoardCollector
    except ImportError:
        return _refusal(503, "The board's metrics need prometheus-client: pip install 'oqronkit[prometheus]'.")
    registry = CollectorRegistry()
    registry.register(BoardCollector(configured_scope()))
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
