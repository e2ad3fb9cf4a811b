"""Expressions, aliases, bounds, time zones and DST (no engine needed)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from oqronkit import ConfigurationError, InvalidSchedule
from oqronkit.scheduler.rrule import RRuleTiming
from oqronkit.scheduler.timing import CronTiming, EveryTiming, OnceTiming, normalise_expression, wall_to_ms

from .conftest import ms

NY, BERLIN = "America/New_York", "Europe/Berlin"


def fires(timing, start: datetime, n: int, zone: str = "UTC") -> list[str]:
    """The next ``n`` slots after ``start`` as local ISO strings."""
    out, t = [], ms(start)
    for _ in range(n):
        t = timing.next_after(t)
        out.append(datetime.fromtimestamp(t / 1000, ZoneInfo(zone)).isoformat())
    return out


def test_five_field_expression_in_utc():
    assert fires(CronTiming("0 3 * * *", "UTC"), datetime(2026, 1, 1, 4, tzinfo=UTC), 2) == [
        "2026-01-02T03:00:00+00:00", "2026-01-03T03:00:00+00:00"]


def test_six_field_expression_has_seconds_first():
    timing = CronTiming("*/15 0 12 * * *", "UTC")
    assert fires(timing, datetime(2026, 1, 1, 11, tzinfo=UTC), 3) == [
        "2026-01-01T12:00:00+00:00", "2026-01-01T12:00:15+00:00", "2026-01-01T12:00:30+00:00"]


def test_every_second_is_allowed():
    timing = CronTiming("* * * * * *", "UTC")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert timing.next_after(ms(start)) == ms(start) + 1000
    assert timing.previous(ms(start) + 1500) == ms(start) + 1000


@pytest.mark.parametrize(("alias", "expanded"), [
    ("@yearly", "0 0 1 1 *"), ("@annually", "0 0 1 1 *"), ("@monthly", "0 0 1 * *"), ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"), ("@midnight", "0 0 * * *"), ("@hourly", "0 * * * *"), ("@DAILY", "0 0 * * *"),
])
def test_aliases(alias, expanded):
    assert normalise_expression(alias) == expanded


@pytest.mark.parametrize("bad", [
    "", "   ", "* * * *", "* * * * * * *", "61 * * * *", "* 25 * * *", "0 0 31 2 *", "@fortnightly",
    "*/0 * * * *", "a b c d e", "1" * 300,
])
def test_invalid_expressions_raise_a_configuration_error(bad):
    with pytest.raises(ConfigurationError):
        CronTiming(bad, "UTC")


def test_unknown_time_zone():
    with pytest.raises(InvalidSchedule, match="Unknown time zone"):
        CronTiming("0 3 * * *", "Mars/Olympus")


def test_per_definition_time_zone():
    assert fires(CronTiming("0 9 * * *", "Asia/Tokyo"), datetime(2026, 5, 31, 23, tzinfo=UTC), 1, "UTC") == [
        "2026-06-01T00:00:00+00:00"]  # 09:00 in Tokyo is midnight UTC


# -- DST: fixed-time expressions follow the wall clock ------------------------------------------


def test_spring_forward_0230_daily_fires_once_at_the_end_of_the_gap_new_york():
    assert fires(CronTiming("30 2 * * *", NY), datetime(2026, 3, 7, 12, tzinfo=ZoneInfo(NY)), 3, NY) == [
        "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"]


def test_spring_forward_0230_daily_berlin_five_and_six_fields_agree():
    start = datetime(2026, 3, 28, 12, tzinfo=UTC)
    expected = ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]
    assert fires(CronTiming("30 2 * * *", BERLIN), start, 2, BERLIN) == expected
    assert fires(CronTiming("0 30 2 * * *", BERLIN), start, 2, BERLIN) == expected


def test_fall_back_0130_daily_fires_once_new_york():
    assert fires(CronTiming("30 1 * * *", NY), datetime(2026, 10, 31, 12, tzinfo=ZoneInfo(NY)), 3, NY) == [
        "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00", "2026-11-03T01:30:00-05:00"]


def test_fall_back_0230_daily_fires_once_berlin():
    assert fires(CronTiming("30 2 * * *", BERLIN), datetime(2026, 10, 24, 12, tzinfo=UTC), 2, BERLIN) == [
        "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]


def test_slots_inside_one_gap_collapse_into_one_fire():
    timing = CronTiming("0,30 2 * * *", NY)
    assert fires(timing, datetime(2026, 3, 8, 0, tzinfo=ZoneInfo(NY)), 2, NY) == [
        "2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"]


def test_previous_on_fall_back_day_sees_the_first_occurrence_only():
    timing = CronTiming("30 1 * * *", NY)
    first = ms(datetime(2026, 11, 1, 5, 30, tzinfo=UTC))  # 01:30 EDT
    assert timing.previous(ms(datetime(2026, 11, 1, 6, 40, tzinfo=UTC))) == first  # 01:40 EST
    assert timing.previous(first) == first
    assert timing.next_after(first) == ms(datetime(2026, 11, 2, 6, 30, tzinfo=UTC))


# -- DST: interval-like expressions follow real time ---------------------------------------------


def test_hourly_fires_twice_in_the_repeated_hour():
    assert fires(CronTiming("0 * * * *", NY), datetime(2026, 11, 1, 0, 10, tzinfo=ZoneInfo(NY)), 3, NY) == [
        "2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"]


def test_interval_keeps_its_spacing_across_spring_forward():
    assert fires(CronTiming("*/30 * * * *", NY), datetime(2026, 3, 8, 1, 10, tzinfo=ZoneInfo(NY)), 3, NY) == [
        "2026-03-08T01:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00"]


def test_wall_to_ms_gap_and_fold():
    ny = ZoneInfo(NY)
    assert wall_to_ms(datetime(2026, 3, 8, 2, 30), ny) == ms(datetime(2026, 3, 8, 7, 0, tzinfo=UTC))
    assert wall_to_ms(datetime(2026, 11, 1, 1, 30), ny) == ms(datetime(2026, 11, 1, 5, 30, tzinfo=UTC))
    assert wall_to_ms(datetime(2026, 7, 1, 12, 0), ny) == ms(datetime(2026, 7, 1, 16, 0, tzinfo=UTC))


# -- every, once, rrule -------------------------------------------------------------------------


def test_every_is_aligned_to_its_anchor():
    timing = EveryTiming(60_000)
    t = ms(datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC))
    assert timing.next_after(t) == ms(datetime(2026, 1, 1, 0, 1, tzinfo=UTC))
    assert timing.previous(t) == ms(datetime(2026, 1, 1, tzinfo=UTC))
    assert EveryTiming(60_000, anchor=t).next_after(t) == t + 60_000
    assert timing.count(0, 59_999) == 1 and timing.count(0, 120_000) == 3


def test_every_below_one_second_is_rejected():
    with pytest.raises(InvalidSchedule, match="at least 1 second"):
        EveryTiming(500)


def test_once_fires_even_when_its_time_passed():
    timing = OnceTiming(1_000)
    assert timing.initial(5_000) == 1_000 and timing.next_after(1_000) is None


def test_rrule_is_evaluated_in_the_schedule_time_zone_across_dst():
    rule = RRuleTiming("FREQ=WEEKLY;BYDAY=MO;BYHOUR=9", BERLIN)
    assert fires(rule, datetime(2026, 3, 20, 12, tzinfo=UTC), 3, BERLIN) == [
        "2026-03-23T09:00:00+01:00", "2026-03-30T09:00:00+02:00", "2026-04-06T09:00:00+02:00"]


def test_rrule_in_a_gap_fires_at_the_end_of_the_gap():
    rule = RRuleTiming("RRULE:FREQ=DAILY;BYHOUR=2;BYMINUTE=30", NY)
    assert fires(rule, datetime(2026, 3, 7, 12, tzinfo=UTC), 2, NY) == [
        "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"]


def test_rrule_with_start_and_count():
    start = ms(datetime(2026, 5, 4, 8, tzinfo=UTC))
    rule = RRuleTiming("FREQ=DAILY;COUNT=2", "UTC", start)
    assert fires(rule, datetime(2026, 5, 1, tzinfo=UTC), 2) == [
        "2026-05-04T08:00:00+00:00", "2026-05-05T08:00:00+00:00"]
    assert rule.next_after(ms(datetime(2026, 5, 5, 9, tzinfo=UTC))) is None


def test_rrule_far_from_its_start_is_fast_and_exact():
    rule = RRuleTiming("FREQ=MONTHLY;INTERVAL=2;BYMONTHDAY=15;BYHOUR=6", "UTC")  # from 2001-01: odd months
    assert fires(rule, datetime(2026, 2, 1, tzinfo=UTC), 2) == [
        "2026-03-15T06:00:00+00:00", "2026-05-15T06:00:00+00:00"]
    assert rule.previous(ms(datetime(2026, 4, 1, tzinfo=UTC))) == ms(datetime(2026, 3, 15, 6, tzinfo=UTC))


@pytest.mark.parametrize(("text", "why"), [
    ("FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30", "sub-daily"),
    ("FREQ=HOURLY", "sub-daily"),
    ("DTSTART=20260101T000000;FREQ=DAILY", "run_at"),
    ("FREQ=DAILY\nFREQ=WEEKLY", "one RRULE"),
    ("BYHOUR=9", "FREQ"),
    ("FREQ=DAILY;BYHOUR=99", "Invalid rrule"),
])
def test_rrule_bounds_and_errors(text, why):
    with pytest.raises(InvalidSchedule, match=why):
        RRuleTiming(text, "UTC")


def test_descriptions():
    assert CronTiming("@daily", "UTC").describe() == "At 00:00 every day (UTC)"
    assert EveryTiming(300_000).describe() == "every 5 minutes"


@pytest.mark.parametrize("expression", [
    "* * * * *", "*/7 3-5 * * 1-5", "0 0 L * *", "15 10 * * MON#2", "*/13 */2 1,15 * *", "0 30 2 * * *",
    "*/5 * * * * *", "0 0 29 2 *",
])
@pytest.mark.parametrize("zone", ["UTC", NY])
def test_the_reused_cronsim_prototype_matches_a_fresh_cronsim(expression, zone):
    from cronsim import CronSim

    timing = CronTiming(expression, zone)
    assert timing._proto is not None
    start = datetime(2026, 3, 1, 0, 0, 7, 250_000, tzinfo=ZoneInfo(zone))
    for reverse in (False, True):
        mine, fresh = timing._iter(start, reverse), CronSim(timing.expression, start, reverse=reverse)
        assert [next(mine) for _ in range(5)] == [next(fresh) for _ in range(5)]
