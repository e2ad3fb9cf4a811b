"""The Caches page: every declared cache (its definition record in namespace ``cache``)
with its options and statistics from the engine (hits, misses, hit ratio, stale serves,
fetch errors), live; operators invalidate by tag or by prefix, audited. Everything goes
through :func:`oqronkit.caches.declared_caches` and :func:`oqronkit.caches.open_cache`
on the board's scoped engine (the definition is never rewritten)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from oqronboard.base.templating import render
from oqronkit.caches import CacheInfo, declared_caches, open_cache
from oqronkit.clock import now_ms
from oqronkit.errors import ConfigurationError, InvalidState

from ..base.audit import Action
from ..base.pages import BadFilter, BoardRequest, back, board_view, refresh_others, scope_of
from ..base.roles import operator_required

NO_CACHE = "No cache of that name in this project and environment."
MAX_INPUT = 500


def cache_rows(infos: list[CacheInfo]) -> list[dict[str, Any]]:
    rows = []
    for info in infos:
        d = info.definition
        ratio = info.hit_ratio
        rows.append({"name": info.name, "stats": info.stats, "ratio": None if ratio is None else 100 * ratio,
                     "ttl_ms": d.get("ttlMs"), "swr_ms": d.get("staleWhileRevalidateMs"),
                     "sie_ms": d.get("staleIfErrorMs"), "negative_ttl_ms": d.get("negativeTtlMs"),
                     "jitter": d.get("ttlJitter"), "tags": [str(t) for t in d.get("tags") or []],
                     "local": d.get("local"), "max_value_bytes": d.get("maxValueBytes")})
    return rows


@board_view
def caches_page(request: BoardRequest) -> HttpResponse:
    """Every declared cache; ``?panel=live`` renders the live panel for htmx."""
    context = {"caches": cache_rows(declared_caches(scope_of(request).engine)), "now": now_ms()}
    if request.htmx and request.GET.get("panel") == "live":
        return render(request, "oqronboard/caches.html#live", context)
    return render(request, "oqronboard/caches.html", context)


def _value(request: BoardRequest, field: str, label: str) -> str:
    value = request.POST.get(field, "")
    if not value.strip() or len(value) > MAX_INPUT or "\x00" in value:
        raise BadFilter(f"Give the {label} (1-{MAX_INPUT} characters, no NUL).")
    return value


@require_POST
@board_view
@operator_required
def cache_invalidate(request: BoardRequest, cache: str) -> HttpResponse:
    """Invalidate every entry of ``cache`` carrying a tag (``tag``) or whose key starts
    with a prefix (``prefix``, ending with ':'), reaching every process's L1."""
    scope = scope_of(request)
    by = request.POST.get("by")
    if by not in ("tag", "prefix"):
        raise BadFilter("Invalidate by 'tag' or by 'prefix'.")
    value = _value(request, "value", by)
    try:
        handle = open_cache(scope.engine, cache)
    except (InvalidState, ConfigurationError) as exc:
        raise Http404(NO_CACHE) from exc
    try:
        if by == "tag":
            handle.invalidate_tags(value)
        else:
            handle.invalidate_prefix(value)
    except ConfigurationError as exc:
        raise BadFilter(str(exc)) from exc
    message = f"Cache {cache}: every entry with {by} {value!r} invalidated."
    Action(scope, request.user.get_username(), f"invalidate-{by}", queue=None,
           extra={"cache": cache, by: value, "target": f"{by} {value} of cache {cache}"}).save(ok=True, result=message)
    if request.htmx:
        return refresh_others(render(request, "oqronboard/caches.html#result", {"ok": True, "message": message}))
    messages.success(request, message)
    return back(request, reverse("oqronboard:caches"))
