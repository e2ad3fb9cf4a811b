"""Reading the metrics history: one range of one (scope, key) at the resolution the
range calls for, read by bucket id (primary-key lookups, never a scan), every bucket
start present (a bucket without runs is a zero point)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..clock import now_ms
from ..durable import DurablePlane
from ..errors import InvalidRecord
from .buckets import RESOLUTION_MS, RESOLUTION_NAMESPACE, SCOPES, Resolution, bucket_id, floor_to
from .deploys import DeployMarker, deploy_markers
from .tail import live_summaries

#: Each range the board offers: (its length, the resolution that keeps it at or under ~1,500 points).
RANGES: Final[dict[str, tuple[int, Resolution]]] = {
    "1h": (3_600_000, "minute"),
    "24h": (86_400_000, "minute"),
    "7d": (7 * 86_400_000, "hour"),
    "30d": (30 * 86_400_000, "hour"),
    "90d": (90 * 86_400_000, "day"),
    "1y": (365 * 86_400_000, "day"),
}
_LOOKUP: Final = 1000


@dataclass(frozen=True, slots=True)
class Point:
    """One bucket of a history: its start, runs by outcome, retries, duration and wait quantiles."""

    start: int
    outcomes: dict[str, int]
    retries: int
    duration: dict[str, float | None]
    wait: dict[str, float | None]

    @property
    def runs(self) -> int:
        return sum(self.outcomes.values())

    def to_json(self) -> dict[str, Any]:
        return {"start": self.start, "runs": self.runs, "outcomes": self.outcomes, "retries": self.retries,
                "durationMs": self.duration, "waitMs": self.wait}


@dataclass(frozen=True)
class History:
    """What :meth:`oqronkit.Engine.metrics_history` answers."""

    scope: str
    key: str
    span: str
    resolution: Resolution
    start: int
    end: int
    points: list[Point]
    deploys: list[DeployMarker] = field(default_factory=list)
    #: Some bucket is demo data (oqronkit.history.backfill), not rolled up from runs.
    synthetic: bool = False

    def totals(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for point in self.points:
            for outcome, count in point.outcomes.items():
                total[outcome] = total.get(outcome, 0) + count
        return total

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.scope, "key": self.key, "range": self.span, "resolution": self.resolution,
                "start": self.start, "end": self.end, "totals": self.totals(),
                "points": [p.to_json() for p in self.points], "deploys": [d.to_json() for d in self.deploys],
                "synthetic": self.synthetic}


def check_request(scope: str, key: str, span: str) -> None:
    """Raise InvalidRecord (a ValueError) naming what is wrong with a history request."""
    if scope not in SCOPES:
        raise InvalidRecord(f"history scope {scope!r} is not one of {', '.join(SCOPES)}.")
    if span not in RANGES:
        raise InvalidRecord(f"history range {span!r} is not one of {', '.join(RANGES)}.")
    if not isinstance(key, str) or not key or len(key) > 300:
        raise InvalidRecord("a history key is 1-300 characters (a queue, handler or topic/group name; * for all).")


def point_of(summary: Mapping[str, Any] | None, start: int) -> Point:
    """A chart's point from a bucket's summary (Bucket.summary, written by the rollup:
    taken as it is), zeros when there is none."""
    if summary is None:
        return Point(start, {}, 0, _EMPTY, _EMPTY)
    return Point(start, summary.get("outcomes") or {}, summary.get("retries") or 0,
                 summary.get("durationMs") or _EMPTY, summary.get("waitMs") or _EMPTY)


_EMPTY: Final[dict[str, float | None]] = dict.fromkeys(("p50", "p95", "p99"))


def metrics_history(durable: DurablePlane, scope: str, key: str, span: str, *, now: int | None = None) -> History:
    """The history of one (scope, key) over ``span`` (a key of RANGES), oldest bucket first."""
    check_request(scope, key, span)
    length, resolution = RANGES[span]
    at = now_ms() if now is None else now
    step = RESOLUTION_MS[resolution]
    end = floor_to(at, resolution) + step
    start = end - length
    starts = list(range(start, end, step))
    ids = [bucket_id(s, scope, key) for s in starts]
    namespace = RESOLUTION_NAMESPACE[resolution]
    found: dict[int, Mapping[str, Any]] = {}
    synthetic = False
    for offset in range(0, len(ids), _LOOKUP):
        for record in durable.get_many(namespace, ids[offset:offset + _LOOKUP]):
            found[int(record.value.get("start") or 0)] = record.value
            synthetic = synthetic or record.value.get("synthetic") is True
    if resolution != "minute":  # the last hour or day before it is merged: from its parts
        found.update(live_summaries(durable, resolution, starts[-2:], scope, key))
    points = [point_of(found.get(s), s) for s in starts]
    return History(scope, key, span, resolution, start, end, points, deploy_markers(durable, since=start),
                   synthetic)

