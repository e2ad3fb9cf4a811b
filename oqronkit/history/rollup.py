"""The leader's rollup pass: runs into minute buckets, minutes into hours, hours into days.

Idempotent by construction: every bucket is recomputed from its source (the runs of its
minute, the minute buckets of its hour, the hour buckets of its day) and written under a
deterministic id, replacing what was there; nothing is ever incremented. A crash between
two writes, a pass run twice, or a new leader starting from an older watermark only
recomputes a bucket to the same value.

Late runs: a minute is bucketed by the runs' ``startedAt`` (one range read of the
startedAt index) and rolled once it ended :data:`LAG_MS` ago (runs reach the durable
plane within a second or two of their start). A minute that still held running or
queued runs when it was rolled is rolled again on every pass until none is left or it is
:data:`REROLL_MS` old; its hour and day are then recomputed. A run still open after
that hour is counted under its last status seen (``running``). After a gap between
passes (an outage, no leader for a while), the minutes since the last pass are rolled
once more :data:`RECHECK_AFTER_MS` later, for the runs a worker wrote late (its
write-behind backlog); a run written later still is not counted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from ..clock import now_ms
from ..config import OqronConfig
from ..durable import DurablePlane, RecordWrite
from ..namespaces import METRICS_STATE, RUNS
from .buckets import (
    DAY_MS,
    HOUR_MS,
    MINUTE_MS,
    RESOLUTION_MS,
    RESOLUTION_NAMESPACE,
    Bucket,
    Resolution,
    add_run,
    bucket_id,
    floor_to,
    manifest_id,
    sketch_id,
)

logger = logging.getLogger(__name__)
#: A minute is rolled once it ended this long ago.
LAG_MS: Final = 60_000
#: A minute with open runs is rolled again on each pass until it is this old.
REROLL_MS: Final = 3_600_000
#: Minutes one pass rolls at most: a leader back after a long gap catches up over several passes.
CATCH_UP_MINUTES: Final = 180
#: Where a first pass (no watermark yet) starts: this long before now.
FIRST_LOOKBACK_MS: Final = 3_600_000
#: A pass this long after the last one follows an outage or a time without a leader: runs
#: held back meanwhile (a worker's write-behind backlog) may land after it, so the minutes
#: since the last pass are rolled once more RECHECK_AFTER_MS later.
GAP_MS: Final = 180_000
RECHECK_AFTER_MS: Final = 300_000
STATE_ID: Final = "rollup"
PAGE: Final = 1000


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


@dataclass
class RollupReport:
    minutes: int = 0
    hours: int = 0
    days: int = 0
    runs: int = 0


def read_state(durable: DurablePlane) -> dict[str, Any]:
    found = durable.get(METRICS_STATE, STATE_ID)
    return dict(found.value) if found is not None else {}


def rollup(durable: DurablePlane, *, retention: Retention = Retention(), now: int | None = None) -> RollupReport:
    """One pass: roll every closed minute past the watermark (and open minutes again),
    then every hour and day those minutes completed or changed. Returns what it wrote."""
    at = now_ms() if now is None else now
    state = read_state(durable)
    closed_until = floor_to(at - LAG_MS, "minute")  # minutes starting before it have ended LAG_MS ago
    next_minute = int(state.get("next") or max(closed_until - FIRST_LOOKBACK_MS, 0))
    due = list(range(next_minute, closed_until, MINUTE_MS))[:CATCH_UP_MINUTES]
    reroll = [m for m in _ints(state.get("open")) if m >= at - REROLL_MS and m < next_minute]
    recheck = _rechecks(state.get("recheck"))
    rechecked = [m for m, when in recheck.items() if when <= at and m < next_minute]
    report = RollupReport()
    still_open: list[int] = []
    dirty_hours = set(_ints(state.get("dirtyHours")))
    for minute in sorted(set(reroll) | set(due) | set(rechecked)):
        open_runs = roll_minute(durable, minute, retention, report)
        if open_runs:
            still_open.append(minute)
        dirty_hours.add(floor_to(minute, "hour"))
    rolled_until = due[-1] + MINUTE_MS if due else next_minute
    for minute in rechecked:
        del recheck[minute]
    last = state.get("rolledAt")
    if isinstance(last, int) and at - last > GAP_MS:
        since = floor_to(last - LAG_MS - GAP_MS, "minute")
        recheck.update({m: at + RECHECK_AFTER_MS for m in range(max(since, rolled_until - CATCH_UP_MINUTES * MINUTE_MS),
                                                                 rolled_until, MINUTE_MS)})
    dirty_days = set(_ints(state.get("dirtyDays")))
    for hour in sorted(h for h in dirty_hours if h + HOUR_MS <= rolled_until):
        merge_into(durable, "hour", hour, retention)
        report.hours += 1
        dirty_hours.discard(hour)
        dirty_days.add(floor_to(hour, "day"))
    for day in sorted(d for d in dirty_days if d + DAY_MS <= rolled_until):
        merge_into(durable, "day", day, retention)
        report.days += 1
        dirty_days.discard(day)
    durable.put(METRICS_STATE, STATE_ID, {"next": rolled_until, "open": still_open,
                                          "dirtyHours": sorted(dirty_hours), "dirtyDays": sorted(dirty_days),
                                          "recheck": sorted([m, when] for m, when in recheck.items()),
                                          "rolledAt": at})
    if report.minutes:
        logger.debug("rollup: %d minute(s), %d hour(s), %d day(s), %d run(s)", report.minutes, report.hours,
                     report.days, report.runs, extra={"action": "history.rollup"})
    return report


def roll_minute(durable: DurablePlane, minute: int, retention: Retention, report: RollupReport) -> int:
    """Recompute and replace the buckets of ``minute`` from its runs; returns the runs still open."""
    buckets: dict[tuple[str, str], Bucket] = {}
    cursor: str | None = None
    while True:
        page = durable.list(RUNS, order="started", started_from=minute, started_to=minute + MINUTE_MS,
                            limit=PAGE, cursor=cursor)
        for record in page.records:
            add_run(buckets, minute, record.value)
        report.runs += len(page.records)
        cursor = page.next_cursor
        if cursor is None:
            break
    write_buckets(durable, "minute", minute, buckets.values(), retention)
    report.minutes += 1
    everything = buckets.get(("all", "*"))
    return everything.open if everything is not None else 0


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
                  retention: Retention, *, synthetic: bool = False) -> None:
    """Replace the buckets and the manifest of one interval in one write (none: nothing
    to write). ``synthetic``: demo data (history/backfill.py), labelled as such."""
    namespace = RESOLUTION_NAMESPACE[resolution]
    expires = start + RESOLUTION_MS[resolution] + retention.of(resolution)
    label = {"synthetic": True} if synthetic else {}
    rows: list[RecordWrite] = []
    keys: list[list[str]] = []
    for b in buckets:
        rows.append(RecordWrite(namespace, bucket_id(start, b.scope, b.key), {**b.summary(resolution), **label},
                                expires))
        rows.append(RecordWrite(namespace, sketch_id(start, b.scope, b.key), b.to_value(resolution), expires))
        keys.append([b.scope, b.key])
    if not rows:
        return
    rows.append(RecordWrite(namespace, manifest_id(start), {"start": start, "keys": keys}, expires))
    durable.apply(puts=rows)


def _rechecks(value: Any) -> dict[int, int]:
    """The state's ``[[minute, due at], ...]`` as a dict; anything malformed left out."""
    pairs = value if isinstance(value, list) else []
    return {int(p[0]): int(p[1]) for p in pairs
            if isinstance(p, list) and len(p) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in p)}


def _ints(value: Any) -> list[int]:
    return [int(v) for v in value if isinstance(v, int) and not isinstance(v, bool)] \
        if isinstance(value, list) else []
