"""The leader's rollup pass: runs into minute buckets, minutes into hours, hours into days.

Idempotent by construction: every bucket is recomputed from its source (the runs of its
minute, the minute buckets of its hour, the hour buckets of its day) and written under a
deterministic id, replacing what was there; nothing is ever incremented (settle.py moves
an open run from the stored value in the write that unlists it). A crash between two
writes, a pass run twice, or a new leader starting from an older watermark only
recomputes a bucket to the same value.

Late runs: a minute is bucketed by the runs' ``startedAt`` (one range read of the
startedAt index) and rolled once it ended :data:`LAG_MS` ago (runs reach the durable
plane within a second or two of their start). A minute that still held running or
queued runs when it was rolled lists them, and each pass looks them up by id (settle.py)
until none is left or the minute is :data:`REROLL_MS` old; its hour and day are then
recomputed. A run still open after
that hour is counted under its last status seen (``running``). After a gap between
passes (an outage, no leader for a while), the minutes since the last pass are rolled
once more :data:`RECHECK_AFTER_MS` later, for the runs a worker wrote late (its
write-behind backlog); a run written later still is not counted.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from ..clock import now_ms
from ..durable import DurablePlane
from ..namespaces import METRICS_STATE, RUNS
from .buckets import DAY_MS, HOUR_MS, MINUTE_MS, floor_to
from .settle import settle_minute
from .writes import DEFAULT_RETENTION, Retention, RollupReport, merge_into, roll_minute

__all__ = ["LAG_MS", "Retention", "RollupReport", "merge_into", "read_state", "roll_minute", "rollup"]

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


def read_state(durable: DurablePlane) -> dict[str, Any]:
    found = durable.get(METRICS_STATE, STATE_ID)
    return dict(found.value) if found is not None else {}


def rollup(durable: DurablePlane, *, retention: Retention = DEFAULT_RETENTION, now: int | None = None) -> RollupReport:
    """One pass: roll every closed minute past the watermark (and open minutes again),
    then every hour and day those minutes completed or changed. Returns what it wrote."""
    at = now_ms() if now is None else now
    state = read_state(durable)
    closed_until = floor_to(at - LAG_MS, "minute")  # minutes starting before it have ended LAG_MS ago
    next_minute = int(state.get("next") or max(closed_until - FIRST_LOOKBACK_MS, 0))
    due = _from_first_run(durable, list(range(next_minute, closed_until, MINUTE_MS))[:CATCH_UP_MINUTES])
    reroll = [m for m in _ints(state.get("open")) if m >= at - REROLL_MS and m < next_minute]
    recheck = _rechecks(state.get("recheck"))
    rechecked = [m for m, when in recheck.items() if when <= at and m < next_minute]
    report = RollupReport()
    still_open: list[int] = []
    dirty_hours = set(_ints(state.get("dirtyHours")))
    for minute in sorted(set(reroll) | set(due) | set(rechecked)):
        whole = minute not in reroll or minute in rechecked
        open_runs = (roll_minute if whole else settle_minute)(durable, minute, retention, report)
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


def _from_first_run(durable: DurablePlane, due: list[int]) -> list[int]:
    """``due`` without its leading minutes that hold no run: one read of the startedAt
    index instead of one per empty minute (a first pass looks back an hour, often at
    nothing). The last minute stays, so the watermark still advances past them all."""
    if len(due) < 2:
        return due
    first = durable.list(RUNS, order="started", started_from=due[0], started_to=due[-1], limit=1).records
    if not first:
        return due[-1:]
    try:
        start = floor_to(int(float(first[0].value["startedAt"])), "minute")
    except (KeyError, TypeError, ValueError):  # the index took it as a number; read it whole then
        return due
    return [m for m in due if m >= start]


def _rechecks(value: Any) -> dict[int, int]:
    """The state's ``[[minute, due at], ...]`` as a dict; anything malformed left out."""
    pairs = value if isinstance(value, list) else []
    return {int(p[0]): int(p[1]) for p in pairs
            if isinstance(p, list) and len(p) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in p)}


def _ints(value: Any) -> list[int]:
    return [int(v) for v in value if isinstance(v, int) and not isinstance(v, bool)] \
        if isinstance(value, list) else []
