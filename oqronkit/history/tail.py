"""The hours and days not merged yet (the current hour and day, and one that closed
less than a pass ago), computed when read from the finer buckets' sketches, so an hour
or day chart reaches the present; nothing is written."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..durable import DurablePlane
from .buckets import HOUR_MS, MINUTE_MS, RESOLUTION_MS, RESOLUTION_NAMESPACE, Bucket, Resolution, sketch_id
from .rollup import read_state


def merged_until(state: Mapping[str, Any], resolution: Resolution) -> tuple[int, set[int]]:
    """Buckets of ``resolution`` ending at or before the first value are merged, but for
    those in the second (dirty: one of their parts was rolled again since)."""
    rolled = int(state.get("next") or 0)
    dirty = state.get("dirtyHours" if resolution == "hour" else "dirtyDays") or []
    return rolled, {int(d) for d in dirty if isinstance(d, int)}


def live_summaries(durable: DurablePlane, resolution: Resolution, starts: list[int], scope: str,
                   key: str) -> dict[int, dict[str, Any]]:
    """The summaries of the buckets among ``starts`` (hour or day) not merged yet, from
    their parts; a bucket with no part with runs is left out."""
    state = read_state(durable)
    rolled, dirty = merged_until(state, resolution)
    step = RESOLUTION_MS[resolution]
    pending = [s for s in starts if s + step > rolled or s in dirty]
    found: dict[int, dict[str, Any]] = {}
    for start in pending:
        bucket = _from_parts(durable, resolution, start, scope, key, rolled)
        if bucket is not None and bucket.runs:
            found[start] = bucket.summary(resolution)
    return found


def _from_parts(durable: DurablePlane, resolution: Resolution, start: int, scope: str, key: str,
                rolled: int) -> Bucket | None:
    """A day from its merged hours plus the minutes of the hours not merged; an hour from its minutes."""
    total = Bucket(scope, key, start)
    if resolution == "hour":
        minutes = list(range(start, start + HOUR_MS, MINUTE_MS))
        parts = [("minute", m) for m in minutes]
    else:
        hours = list(range(start, start + RESOLUTION_MS["day"], HOUR_MS))
        parts = [("hour", h) for h in hours if h + HOUR_MS <= rolled]
        parts += [("minute", m) for h in hours if h + HOUR_MS > rolled for m in range(h, h + HOUR_MS, MINUTE_MS)
                  if m < rolled]
    for finer in ("minute", "hour"):
        ids = [sketch_id(s, scope, key) for kind, s in parts if kind == finer]
        if ids:
            for record in durable.get_many(RESOLUTION_NAMESPACE[finer], ids):
                total.merge(Bucket.from_value(record.value))
    return total
