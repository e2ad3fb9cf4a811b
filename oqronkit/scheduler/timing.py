"""Fire times ("slots") as epoch milliseconds: cron expressions, fixed intervals, one-off
times and RRULEs, each evaluated in its definition's time zone.

Cron expressions (parsed by cronsim):

* 5 fields ``minute hour day-of-month month day-of-week``, or 6 fields with the
  **seconds field FIRST**: ``second minute hour day-of-month month day-of-week``
  (Quartz/Spring/cronsim order; note croniter puts seconds last). Aliases:
  ``@yearly`` ``@annually`` ``@monthly`` ``@weekly`` ``@daily`` ``@midnight`` ``@hourly``.

DST (the rule Debian cron and cronie use, which cronsim also follows):

* *Fixed-time* expressions (minute and hour fields both specific, e.g. ``30 2 * * *``)
  follow the wall clock. A wall time that does not exist (spring-forward gap) fires once
  at the first valid instant after the gap (02:30 on 2026-03-08 in New York fires at
  03:00 EDT); several slots inside one gap collapse into that one fire. A wall time that
  occurs twice (fall-back) fires once, at its first occurrence.
* *Interval-like* expressions (``*`` or ``*/n`` in the minute or hour field) follow
  real elapsed time: ``0 * * * *`` fires twice in the repeated hour of a fall-back day
  and ``*/15 * * * *`` keeps its 15-minute spacing across both transitions.
* ``every=`` intervals are absolute (UTC) and aligned to their anchor (the Unix epoch
  unless a ``run_at`` start is given), so ``every=3600`` fires on the hour.
* RRULEs (:mod:`.rrule`) are expanded in wall time from their start and mapped like
  fixed-time crons.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from ..errors import InvalidSchedule

ALIASES = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
MAX_EXPRESSION_CHARS = 200
MIN_EVERY_MS = 1000  # the scheduler ticks a few times a second; sub-second intervals could not be honoured
MAX_SCAN = 10_000  # candidates examined per next/previous call before giving up
DST_MARGIN = timedelta(hours=3)  # larger than any UTC offset change
_CRONSIM_STATE = ("skip_initial_tick", "dt", "tick_direction", "fixup_tz")


class Timing(Protocol):
    recurring: bool

    def next_after(self, t: int) -> int | None:
        """The first slot strictly after ``t`` (None when there is none)."""

    def previous(self, t: int) -> int | None:
        """The latest slot at or before ``t``."""

    def initial(self, now: int) -> int | None:
        """The first slot a new definition should fire (at or after ``now``)."""

    def describe(self) -> str:
        """The timing in words."""


def get_zone(name: str) -> tzinfo:
    """A time zone by IANA name; ``UTC`` maps to the fast fixed-offset zone."""
    if name in ("UTC", "Etc/UTC", "Z"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError) as exc:
        raise InvalidSchedule(f"Unknown time zone {name!r}: use an IANA name such as 'Europe/Berlin'.") from exc


def to_ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def local(t: int, tz: tzinfo) -> datetime:
    return datetime.fromtimestamp(t / 1000, tz)


def wall_to_ms(naive: datetime, tz: tzinfo) -> int:
    """The instant of a wall-clock time: its first occurrence when ambiguous, the end
    of the gap when it does not exist. Monotonic in ``naive``."""
    first = naive.replace(tzinfo=tz, fold=0)
    instant = first.astimezone(UTC)
    if instant.astimezone(tz).replace(tzinfo=None) == naive:
        return to_ms(instant)
    # In a gap, fold=0 uses the offset before the transition (an instant after it) and
    # fold=1 the offset after (an instant before it): the transition lies in between.
    lo = int(naive.replace(tzinfo=tz, fold=1).timestamp())
    hi = int(instant.timestamp())
    after = instant.astimezone(tz).utcoffset()
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, tz).utcoffset() == after:
            hi = mid
        else:
            lo = mid
    return hi * 1000


def normalise_expression(expression: str) -> str:
    """Expand an alias and collapse spaces; validate the field count and length."""
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidSchedule("A cron expression must be a non-empty string such as '0 3 * * *'.")
    text = " ".join(expression.split())
    if len(text) > MAX_EXPRESSION_CHARS:
        raise InvalidSchedule(f"Cron expression is {len(text)} characters; at most {MAX_EXPRESSION_CHARS} allowed.")
    if text.startswith("@"):
        if text.lower() not in ALIASES:
            raise InvalidSchedule(f"Unknown cron alias {text!r}; known: {', '.join(ALIASES)}.")
        return ALIASES[text.lower()]
    if len(text.split()) not in (5, 6):
        raise InvalidSchedule(
            f"Cron expression {text!r} has {len(text.split())} fields: use 5 (minute hour day month weekday) "
            "or 6 with the seconds field first (second minute hour day month weekday)."
        )
    return text


class CronTiming:
    """A cron expression in a time zone (see the module docstring for DST)."""

    recurring = True

    def __init__(self, expression: str, zone: str) -> None:
        self.expression = normalise_expression(expression)
        self.zone = zone
        self.tz = get_zone(zone)
        parts = self.expression.split()
        minute, hour = (parts[0], parts[1]) if len(parts) == 5 else (parts[1], parts[2])
        self.wall = self.tz is not UTC and not minute.startswith("*") and not hour.startswith("*")
        try:
            proto = CronSim(self.expression, datetime(2026, 1, 1))
        except (CronSimError, ValueError, IndexError) as exc:
            raise InvalidSchedule(f"Invalid cron expression {self.expression!r}: {exc}.") from exc
        # Parsing dominates a cronsim step; a parsed prototype re-aimed at a new start is
        # several times cheaper. Only when this cronsim has the attributes we re-aim.
        self._proto = proto if all(hasattr(proto, a) for a in _CRONSIM_STATE) else None

    def _iter(self, start: datetime, reverse: bool = False) -> CronSim:
        if self._proto is None:
            return CronSim(self.expression, start, reverse=reverse)
        it = copy.copy(self._proto)
        it.skip_initial_tick = bool(reverse and start.microsecond)  # as CronSim.__init__ sets them
        it.dt = start.replace(microsecond=0)
        it.tick_direction = -1 if reverse else 1
        it.fixup_tz = None  # we never want cronsim's own DST fix-up: see the module docstring
        return it

    def next_after(self, t: int) -> int | None:
        try:
            if not self.wall:
                return to_ms(next(self._iter(local(t, self.tz))))
            it = self._iter(local(t, self.tz).replace(tzinfo=None))
            for _ in range(MAX_SCAN):
                slot = wall_to_ms(next(it), self.tz)
                if slot > t:
                    return slot
        except StopIteration:
            return None
        return None

    def previous(self, t: int) -> int | None:
        try:
            if not self.wall:  # cronsim's reverse yields strictly before: start just past t's second
                return to_ms(next(self._iter(local((t // 1000 + 1) * 1000, self.tz), reverse=True)))
            it = self._iter((local(t, self.tz) + DST_MARGIN).replace(tzinfo=None), reverse=True)
            for _ in range(MAX_SCAN):
                slot = wall_to_ms(next(it), self.tz)
                if slot <= t:
                    return slot
        except StopIteration:
            return None
        return None

    def initial(self, now: int) -> int | None:
        return self.next_after(now - 1)

    def describe(self) -> str:
        try:
            words = CronSim(self.expression, datetime(2026, 1, 1)).explain()
        except Exception:  # explain() does not cover every construct; the expression speaks for itself
            words = self.expression
        return f"{words} ({self.zone})"


class EveryTiming:
    """Every ``interval_ms``, aligned to ``anchor`` (epoch ms)."""

    recurring = True

    def __init__(self, interval_ms: int, anchor: int = 0) -> None:
        if not isinstance(interval_ms, int) or interval_ms < MIN_EVERY_MS:
            raise InvalidSchedule(f"every must be at least {MIN_EVERY_MS // 1000} second, got {interval_ms} ms.")
        self.interval = interval_ms
        self.anchor = anchor

    def next_after(self, t: int) -> int | None:
        if t < self.anchor:
            return self.anchor
        return self.anchor + ((t - self.anchor) // self.interval + 1) * self.interval

    def previous(self, t: int) -> int | None:
        if t < self.anchor:
            return None
        return self.anchor + ((t - self.anchor) // self.interval) * self.interval

    def initial(self, now: int) -> int | None:
        return self.next_after(now - 1)

    def count(self, first: int, last: int) -> int:
        """Slots in ``[first, last]`` (``first`` is a slot)."""
        return 0 if last < first else (last - first) // self.interval + 1

    def describe(self) -> str:
        return f"every {_human_ms(self.interval)}"


class OnceTiming:
    """A single fire at ``run_at``; fires even when created after that time."""

    recurring = False

    def __init__(self, run_at: int, zone: str = "UTC") -> None:
        self.run_at = run_at
        self.tz = get_zone(zone)
        self.zone = zone

    def next_after(self, t: int) -> int | None:
        return self.run_at if t < self.run_at else None

    def previous(self, t: int) -> int | None:
        return self.run_at if self.run_at <= t else None

    def initial(self, now: int) -> int | None:
        return self.run_at

    def describe(self) -> str:
        return f"once at {local(self.run_at, self.tz).isoformat(timespec='seconds')} ({self.zone})"


class NeverTiming:
    """A template schedule: fires only through ``trigger()`` or run-now."""

    recurring = False

    def next_after(self, t: int) -> int | None:
        return None

    def previous(self, t: int) -> int | None:
        return None

    def initial(self, now: int) -> int | None:
        return None

    def describe(self) -> str:
        return "only when triggered"


def _human_ms(ms: int) -> str:
    for unit, size in (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000), ("second", 1000)):
        if ms % size == 0:
            count = ms // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{ms} ms"
