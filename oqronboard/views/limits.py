"""The Limits page: every rate limiter (its definition record in namespace
``ratelimit``) with its algorithm, tiers, ban, dry_run and fail_open; a key's current
usage (a peek: nothing counted); operators reset the key, unban it, or set and clear
its override, each audited. The handle is built on the board's scoped engine from the
stored definition with ``declares=False``: the definition is never rewritten.

Below them, each queue's cluster-wide limits (``queue(..., rate_limit=...,
global_concurrency=...)``) and how many claims they held back in the last hour
(``oqronboard/queue_limits.py``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from oqronboard.base.templating import render
from oqronkit.clock import now_ms
from oqronkit.errors import ConfigurationError
from oqronkit.namespaces import RATELIMIT
from oqronkit.ratelimit import RateLimiter

from ..base.audit import Action
from ..base.pages import BadFilter, BoardRequest, back, board_view, refresh_others, scope_of
from ..base.roles import operator_required
from ..base.scope import BoardScope
from ..queue_limits import queue_limit_rows

NO_LIMITER = "No rate limiter of that name in this project and environment."
MAX_KEY = 500
ACTIONS = ("reset", "unban", "override", "clear-override")


def limiter_records(scope: BoardScope) -> list[dict[str, Any]]:
    """Every limiter's definition record value (at most 500), by name."""
    page = scope.engine.durable.list(RATELIMIT, limit=500)
    return sorted((dict(r.value, name=r.id) for r in page.records), key=lambda v: v["name"])


def handle(scope: BoardScope, name: str) -> tuple[dict[str, Any], RateLimiter]:
    record = scope.engine.durable.get(RATELIMIT, name)
    if record is None:
        raise Http404(NO_LIMITER)
    value = dict(record.value, name=record.id)
    ban = value.get("ban")
    try:
        limiter = RateLimiter(
            record.id, algorithm=value["algorithm"],
            tiers=[(t["limit"], timedelta(milliseconds=t["periodMs"])) for t in value["tiers"]],
            ban=None if not ban else (ban["strikes"], timedelta(milliseconds=ban["windowMs"]),
                                      timedelta(milliseconds=ban["durationMs"])),
            dry_run=bool(value.get("dryRun")), fail_open=bool(value.get("failOpen")), engine=scope.engine,
            declares=False)
    except (KeyError, TypeError, ConfigurationError) as exc:
        raise Http404(f"Rate limiter {name}: its definition record cannot be read.") from exc
    return value, limiter


def _key(data: Any) -> str:
    key = data.get("key", "")
    if not key or len(key) > MAX_KEY or "\x00" in key:
        raise BadFilter(f"Give a key (1-{MAX_KEY} characters, no NUL).")
    return str(key)


@board_view
def limits_page(request: BoardRequest) -> HttpResponse:
    """Every limiter; ``?limiter=..&key=..`` adds that key's usage (a peek)."""
    scope = scope_of(request)
    usage = None
    name, key = request.GET.get("limiter", ""), request.GET.get("key", "")
    if name or key:
        value, limiter = handle(scope, name)
        key = _key(request.GET)
        usage = {"limiter": value["name"], "key": key, "decision": limiter.peek(key)}
    now = now_ms()
    queue_limits, queue_problem = queue_limit_rows(scope, now)
    context = {"limiters": limiter_records(scope), "usage": usage, "now": now, "queue_limits": queue_limits,
               "queue_problem": queue_problem}
    if request.htmx and request.GET.get("panel") == "live":
        return render(request, "oqronboard/limits.html#live", context)
    return render(request, "oqronboard/limits.html", context)


def _override_limits(data: Any, tiers: int) -> list[int]:
    raw = [part.strip() for part in str(data.get("limits", "")).split(",") if part.strip()]
    if len(raw) != tiers or not all(p.isdigit() and 0 < int(p) < 10**12 for p in raw):
        raise BadFilter(f"Give {tiers} positive whole limit(s), comma separated, one per tier (shortest first).")
    return [int(p) for p in raw]


@require_POST
@board_view
@operator_required
def limiter_action(request: BoardRequest, limiter: str, action: str) -> HttpResponse:
    """reset / unban / override (``limits``: one per tier) / clear-override of ``key``."""
    if action not in ACTIONS:
        raise Http404("No such action.")
    scope = scope_of(request)
    value, found = handle(scope, limiter)
    key = _key(request.POST)
    extra: dict[str, Any] = {}
    if action == "reset":
        found.reset(key)
    elif action == "unban":
        found.unban(key)
    elif action == "clear-override":
        found.clear_override(key)
    else:
        extra["limits"] = _override_limits(request.POST, len(value["tiers"]))
        found.override(key, extra["limits"])
    message = f"Rate limiter {limiter}: {action} of key {key!r} done."
    Action(scope, request.user.get_username(), f"ratelimit-{action}", queue=None,
           extra={"limiter": limiter, "key": key, "target": f"key {key} of rate limiter {limiter}", **extra}
           ).save(ok=True, result=message)
    if request.htmx:
        return refresh_others(render(request, "oqronboard/limits.html#result", {"ok": True, "message": message}))
    messages.success(request, message)
    return back(request, reverse("oqronboard:limits"))
