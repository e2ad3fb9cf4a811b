"""RRULE timing (RFC 5545, via python-dateutil), expanded in the definition's wall time.

Bounds, and why: dateutil expands a rule occurrence by occurrence from its start, so

* ``FREQ`` must be DAILY, WEEKLY, MONTHLY or YEARLY: a sub-daily rule with day filters
  (``FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30`` never matches) would scan billions of
  candidates; cron expressions and ``every=`` cover sub-daily repetition arithmetically;
* rules without COUNT are *rebased*: evaluated from a start a whole number of periods
  later (same occurrences), so a daily rule started years ago costs one or two periods
  per step, not thousands;
* the start is ``run_at`` or, by default, 2001-01-01 00:00 local time (a Monday and the
  1st of January), so the BY* parts a rule leaves out default to clean values: midnight,
  Monday for WEEKLY, the 1st for MONTHLY, January 1st for YEARLY.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..errors import InvalidSchedule
from .timing import DST_MARGIN, MAX_SCAN, get_zone, local, wall_to_ms

if TYPE_CHECKING:
    from dateutil.rrule import rrulebase

RRULE_FREQS = ("DAILY", "WEEKLY", "MONTHLY", "YEARLY")
RRULE_DEFAULT_START = datetime(2001, 1, 1)  # a Monday, the 1st of January, 00:00: clean BY* defaults


def parse_rrule_text(text: str) -> dict[str, str]:
    """``FREQ=DAILY;BYHOUR=9`` (optionally prefixed ``RRULE:``) as upper-case parts."""
    if not isinstance(text, str) or not text.strip() or "\n" in text.strip():
        raise InvalidSchedule("rrule must be one RRULE line such as 'FREQ=WEEKLY;BYDAY=MO;BYHOUR=9'.")
    body = re.sub(r"^RRULE:", "", text.strip(), flags=re.IGNORECASE)
    parts: dict[str, str] = {}
    for item in body.split(";"):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidSchedule(f"rrule {text!r}: {item!r} is not KEY=VALUE.")
        parts[key.strip().upper()] = value.strip().upper()
    if "DTSTART" in parts or "TZID" in parts:
        raise InvalidSchedule("rrule: pass the start as run_at= and the zone as timezone=, not inside the rule.")
    if parts.get("FREQ") not in RRULE_FREQS:
        raise InvalidSchedule(
            f"rrule FREQ must be one of {', '.join(RRULE_FREQS)} (got {parts.get('FREQ')!r}): RRULEs are expanded "
            "occurrence by occurrence from their start, so sub-daily rules would scan huge sets; "
            "use a cron expression or every= for sub-daily repetition."
        )
    return parts


class RRuleTiming:
    """An RFC 5545 RRULE expanded in the definition's wall time from ``start``."""

    recurring = True

    def __init__(self, text: str, zone: str, start: int | None = None) -> None:
        self.parts = parse_rrule_text(text)
        self.text = ";".join(f"{k}={v}" for k, v in self.parts.items())
        self.zone = zone
        self.tz = get_zone(zone)
        self.start = (local(start, self.tz).replace(tzinfo=None, microsecond=0) if start is not None
                      else RRULE_DEFAULT_START)
        self.interval = int(self.parts.get("INTERVAL", "1") or 1)
        self._rules: dict[datetime, rrulebase] = {}
        try:
            self._rule(self.start)
        except (ValueError, TypeError) as exc:
            raise InvalidSchedule(f"Invalid rrule {text!r}: {exc}.") from exc

    def _rule(self, start: datetime) -> rrulebase:
        rule = self._rules.get(start)
        if rule is None:
            from dateutil.rrule import rrulestr  # imported only when an RRULE is used

            if len(self._rules) > 8:
                self._rules.clear()
            rule = self._rules[start] = rrulestr(self.text, dtstart=start)
        return rule

    def _rebased(self, near: datetime) -> rrulebase:
        """The rule restarted a whole number of periods later, at least one period
        before ``near``: same occurrences after ``near``, without expanding every
        period since the original start (COUNT rules cannot be rebased)."""
        s, n = self.start, self.interval
        if "COUNT" in self.parts or near <= s:
            return self._rule(s)
        freq = self.parts["FREQ"]
        new = s
        if freq in ("DAILY", "WEEKLY"):
            days = n * (7 if freq == "WEEKLY" else 1)
            k = (near - s).days // days - 1
            if k > 0:
                new = s + timedelta(days=k * days)
        elif freq == "MONTHLY" and s.day <= 28:
            k = ((near.year - s.year) * 12 + near.month - s.month) // n - 1
            if k > 0:
                months = s.month - 1 + k * n
                new = s.replace(year=s.year + months // 12, month=months % 12 + 1)
        elif freq == "YEARLY" and not (s.month == 2 and s.day == 29):
            k = (near.year - s.year) // n - 1
            if k > 0:
                new = s.replace(year=s.year + k * n)
        return self._rule(new)

    def next_after(self, t: int) -> int | None:
        wall = local(t, self.tz).replace(tzinfo=None)
        rule = self._rebased(wall)
        candidate = rule.after(wall)
        for _ in range(MAX_SCAN):
            if candidate is None:
                return None
            slot = wall_to_ms(candidate, self.tz)
            if slot > t:
                return slot
            candidate = rule.after(candidate)
        return None

    def previous(self, t: int) -> int | None:
        wall = (local(t, self.tz) + DST_MARGIN).replace(tzinfo=None)
        rule = self._rebased(wall - timedelta(days=400 * self.interval))
        candidate = rule.before(wall)
        for _ in range(MAX_SCAN):
            if candidate is None:
                return None
            slot = wall_to_ms(candidate, self.tz)
            if slot <= t:
                return slot
            candidate = rule.before(candidate)
        return None

    def initial(self, now: int) -> int | None:
        return self.next_after(now - 1)

    def describe(self) -> str:
        return f"RRULE {self.text} ({self.zone})"
