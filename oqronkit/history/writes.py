"""The rollup's writes: one minute recomputed from its runs, an hour or a day merged
from the buckets below it, and how buckets are written (summary, sketches, manifest)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from ..config import OqronConfig
from ..durable import DurablePlane, RecordWrite
from ..namespaces import RUNS
from .buckets import (
    DAY_MS,
    HOUR_MS,
    MINUTE_MS,
    OPEN_STATUSES,
    RESOLUTION_MS,
    RESOLUTION_NAMESPACE,
    Bucket,
    Resolution,
    add_run,
    bucket_id,
    manifest_id,
    sketch_id,
)

PAGE: Final = 1000
#: Open runs a minute's manifest lists at most (more: the minute is rolled whole again).
OPEN_LISTED: Final = 1000


@dataclass(frozen=True, kw_only=True)
class Retention:
    """How long each resolution's buckets live (expires_at; retention prunes them)."""

    minute_ms: int = 72 * HOUR_MS
    hour_ms: int = 90 * DAY_MS
    day_ms: int = 730 * DAY_MS

    @classmethod
    def from_config(cls, config: OqronConfig) -> Retention:
        return cls(minute_ms=config.metrics_minute_retention_hours * HOUR_MS,
                   hour_ms=config.metrics_hour_retention_days * DAY_MS,
                   day_ms=config.metrics_day_retention_days * DAY_MS)

    def of(self, resolution: Resolution) -> int:
        return {"minute": self.minute_ms, "hour": self.hour_ms, "day": self.day_ms}[resolution]


DEFAULT_RETENTION: Final = Retention()


@dataclass
class RollupReport:
    minutes: int = 0
    hours: int = 0
    days: int = 0
    runs: int = 0


def roll_minute(durable: DurablePlane, minute: int, retention: Retention, report: RollupReport) -> int:
    """Recompute and replace the buckets of ``minute`` from its runs; returns the runs still open."""
    buckets: dict[tuple[str, str], Bucket] = {}
    open_runs: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = durable.list(RUNS, order="started", started_from=minute, started_to=minute + MINUTE_MS,
                            limit=PAGE, cursor=cursor)
        for record in page.records:
            add_run(buckets, minute, record.value)
            status = record.value.get("status")
            if status in OPEN_STATUSES:
                open_runs.append([record.id, str(status)])
        report.runs += len(page.records)
        cursor = page.next_cursor
        if cursor is None:
            break
    write_buckets(durable, "minute", minute, buckets.values(), retention,
                  open_runs=open_runs if len(open_runs) <= OPEN_LISTED else None)
    report.minutes += 1
    return len(open_runs)


def merge_into(durable: DurablePlane, resolution: Resolution, start: int, retention: Retention) -> None:
    """Recompute and replace the ``resolution`` buckets starting at ``start`` from the
    buckets of the resolution below (hours from minutes, days from hours)."""
    finer: Resolution = "minute" if resolution == "hour" else "hour"
    step = RESOLUTION_MS[finer]
    namespace = RESOLUTION_NAMESPACE[finer]
    starts = range(start, start + RESOLUTION_MS[resolution], step)
    ids: list[str] = []
    for manifest in durable.get_many(namespace, [manifest_id(s) for s in starts]):
        part_start = int(manifest.value.get("start") or 0)
        ids += [sketch_id(part_start, str(scope), str(key)) for scope, key in manifest.value.get("keys") or []]
    merged: dict[tuple[str, str], Bucket] = {}
    for offset in range(0, len(ids), PAGE):
        for record in durable.get_many(namespace, ids[offset:offset + PAGE]):
            part = Bucket.from_value(record.value)
            total = merged.get((part.scope, part.key))
            if total is None:
                total = merged[(part.scope, part.key)] = Bucket(part.scope, part.key, start)
            total.merge(part)
    write_buckets(durable, resolution, start, merged.values(), retention)


def write_buckets(durable: DurablePlane, resolution: Resolution, start: int, buckets: Iterable[Bucket],
                  retention: Retention, *, synthetic: bool = False, open_runs: list[list[str]] | None = None,
                  keys: list[list[str]] | None = None) -> None:
    """Replace ``buckets`` and the manifest of one interval in one write (none: nothing
    to write). ``synthetic``: demo data (history/backfill.py), labelled as such. A
    minute's manifest lists its open runs ([id, status]; None: too many to list) and its
    keys (``keys``: all of them, when ``buckets`` are only some)."""
    namespace = RESOLUTION_NAMESPACE[resolution]
    expires = start + RESOLUTION_MS[resolution] + retention.of(resolution)
    label = {"synthetic": True} if synthetic else {}
    rows: list[RecordWrite] = []
    written: list[list[str]] = []
    for b in buckets:
        rows.append(RecordWrite(namespace, bucket_id(start, b.scope, b.key), {**b.summary(resolution), **label},
                                expires))
        rows.append(RecordWrite(namespace, sketch_id(start, b.scope, b.key), b.to_value(resolution), expires))
        written.append([b.scope, b.key])
    if not rows:
        return
    manifest: dict[str, Any] = {"start": start, "keys": written if keys is None else keys}
    if resolution == "minute":
        manifest["open"] = open_runs
    rows.append(RecordWrite(namespace, manifest_id(start), manifest, expires))
    durable.apply(puts=rows)
