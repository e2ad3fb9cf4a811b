"""``/api/v1/metrics/history/``: the metrics history of one queue, handler or topic
group (``?kind=queue&key=emails&range=7d``; ``kind=all`` needs no key; ``scope`` is
the API's project/environment, as everywhere), as
``Engine.metrics_history`` answers it: buckets oldest first, each with runs by outcome,
retries, duration and wait p50/p95/p99 in ms, and the deploy markers in the range."""

from __future__ import annotations

from typing import Any

from oqronkit.history.buckets import ALL_KEY

from ..base.pages import BadFilter, BoardRequest, scope_of
from ..history import DEFAULT_SPAN
from .base import api_view


@api_view("GET")
def metrics_history(request: BoardRequest) -> dict[str, Any]:
    """A bad scope, key or range is a 400 naming it (the engine's InvalidRecord)."""
    kind = request.GET.get("kind") or "all"
    key = request.GET.get("key") or (ALL_KEY if kind == "all" else "")
    if not key:
        raise BadFilter(f"kind {kind!r} needs a key (a queue, handler or topic/group name).")
    return scope_of(request).engine.metrics_history(kind, key, request.GET.get("range") or DEFAULT_SPAN).to_json()
