"""Filters for the board's templates: epoch milliseconds, durations, JSON.

Every filter returns plain text: Django's autoescaping then escapes whatever came from a
payload, a log line or an error (nothing here is marked safe).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from django import template

from oqronboard.base.values import json_int
from oqronkit.clock import now_ms

register = template.Library()
# What pretty_json shows of a value at most; deeper or longer is "… truncated".
JSON_MAX_DEPTH = 32
JSON_MAX_CHARS = 200_000
TRUNCATED = "… truncated"



@register.filter
def ms_time(value: Any) -> str:
    """Epoch ms as ``2026-12-02 14:31:05 UTC`` ("" when absent)."""
    ms = json_int(value)
    if ms is None:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(value)


@register.filter
def ms_short(value: Any) -> str:
    """Epoch ms as ``12-02 14:31:05`` (UTC; list cells, with :func:`ms_time` as title)."""
    ms = json_int(value)
    if ms is None:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(value)


@register.filter
def ms_iso(value: Any) -> str:
    """Epoch ms as ISO 8601, for ``<time datetime=...>``."""
    ms = json_int(value)
    if ms is None:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return ""


@register.filter
def duration(value: Any) -> str:
    """Milliseconds as ``850 ms``, ``12.3 s``, ``4m 05s``, ``2h 03m`` or ``3d 4h``."""
    ms = json_int(value)
    if ms is None:
        return ""
    ms = max(ms, 0)
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


@register.filter
def ago(value: Any) -> str:
    """How long before now an epoch-ms instant was (``3m 05s ago``)."""
    ms = json_int(value)
    if ms is None:
        return ""
    delta = now_ms() - ms
    return f"in {duration(-delta)}" if delta < 0 else f"{duration(delta)} ago"


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON text (escaped by the template like any other text), bounded: past
    :data:`JSON_MAX_DEPTH` levels or :data:`JSON_MAX_CHARS` characters it shows
    ``… truncated`` (a 10 KB record nested thousands deep would indent to 50 MB)."""
    if _plain(value):
        try:
            text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = ""
        if text and len(text) <= JSON_MAX_CHARS:
            return text  # what the pieces below join to, in one C call (a page of records called this 1,800 times)
    parts: list[str] = []
    size = 0
    for chunk in _json_chunks(value, 0):
        if size + len(chunk) > JSON_MAX_CHARS:
            parts.append(chunk[: JSON_MAX_CHARS - size])
            parts.append("\n" + TRUNCATED)
            break
        parts.append(chunk)
        size += len(chunk)
    return "".join(parts)


#: Containers and values json.dumps may indent in one call (bounding what it builds).
PLAIN_NODES = 5_000


def _plain(value: Any) -> bool:
    """Whether ``value`` nests at most :data:`JSON_MAX_DEPTH` deep, holds at most
    :data:`PLAIN_NODES` values and has only text keys: then ``json.dumps(indent=2)``
    writes what :func:`_json_chunks` would, and nothing unbounded."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > PLAIN_NODES:
            return False
        if isinstance(item, dict):
            if (item and depth >= JSON_MAX_DEPTH) or not all(isinstance(k, str) for k in item):
                return False
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            if item and depth >= JSON_MAX_DEPTH:
                return False
            stack.extend((v, depth + 1) for v in item)
    return True


def _json_chunks(value: Any, depth: int) -> Iterator[str]:
    """``json.dumps(value, indent=2)`` in pieces, containers below the depth cap elided."""
    if isinstance(value, dict | list | tuple):
        if not value:
            yield "{}" if isinstance(value, dict) else "[]"
            return
        if depth >= JSON_MAX_DEPTH:
            yield TRUNCATED
            return
        opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
        pad = "\n" + "  " * (depth + 1)
        yield opening
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for index, (key, item) in enumerate(items):
            yield ("," if index else "") + pad + (_scalar(str(key)) + ": " if isinstance(value, dict) else "")
            yield from _json_chunks(item, depth + 1)
        yield "\n" + "  " * depth + closing
    else:
        yield _scalar(value)


def _scalar(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


@register.filter
def percent(value: Any) -> str:
    try:
        return f"{float(value):.0f}%"
    except (TypeError, ValueError):
        return ""


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    """``mapping|get_item:key`` (None when absent)."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None
