"""Declaring crons and schedules: forms, validation at definition time, bounds."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

import oqronkit
from oqronkit import ConfigurationError, Engine, InvalidSchedule, OqronConfig, Registry, UnknownSchedule
from oqronkit.scheduler import registry_for, set_paused


@pytest.fixture
def eng():
    engine = Engine(OqronConfig(mode="memory", database_url=None), registry=Registry())
    yield engine
    engine.close()


def test_decorator_form_keeps_the_cron_object(eng):
    @oqronkit.cron("nightly", "0 3 * * *", timezone="Europe/Berlin", engine=eng)
    def nightly(ctx):
        return "done"

    assert isinstance(nightly, oqronkit.Cron) and nightly.fn(None) == "done"
    assert nightly.definition.handler.endswith("nightly")
    assert registry_for(eng.registry)[("cron", "nightly")] is nightly
    assert repr(nightly) == "<Cron 'nightly': At 03:00 every day (Europe/Berlin)>"


def test_handler_method_form_and_every(eng):
    beat = oqronkit.cron("beat", every=timedelta(minutes=5), engine=eng)

    @beat.handler
    def run(ctx):
        return 1

    assert run(None) == 1 and beat.fn is run and beat.definition.every_ms == 300_000


def test_declaring_twice_with_different_handlers_is_an_error(eng):
    oqronkit.cron("twice", "@hourly", handler=lambda ctx: 1, engine=eng)
    with pytest.raises(ConfigurationError, match="declared twice"):
        oqronkit.cron("twice", "@hourly", handler=print, engine=eng)


@pytest.mark.parametrize(("args", "options", "match"), [
    (("x",), {}, "exactly one of expression or every"),
    (("x", "* * * * *"), {"every": 60}, "exactly one"),
    (("x", "* * * * *"), {"missed": "sometimes"}, "missed must be one of"),
    (("x", "* * * * *"), {"overlap": "queue"}, "overlap must be one of"),
    (("x", "* * * * *"), {"timezone": "Nowhere/City"}, "Unknown time zone"),
    (("x", "* * * * *"), {"max_missed_runs": 5000}, "at most 1000"),
    (("x", "* * * * *"), {"retries": -1}, "retries must be"),
    (("x", "* * * * *"), {"payload": {"f": object()}}, "not JSON-serialisable"),
    (("x", "* * * * *"), {"jitter": 120}, "jitter"),
    (("x", "* * * * *"), {"as_job": True, "overlap": "buffer-one"}, "buffer-one"),
    (("x",), {"every": 0.2}, "at least 1 second"),
    (("bad:name", "* * * * *"), {}, "name"),
    (("", "* * * * *"), {}, "name"),
    (("x", "0 0 30 2 *"), {}, "Invalid cron expression"),
    (("x", "0 0 0 1 1 * 2001"), {}, "fields"),
])
def test_invalid_crons_fail_at_definition_time(eng, args, options, match):
    with pytest.raises(InvalidSchedule, match=match):
        oqronkit.cron(*args, engine=eng, **options)


def test_schedule_forms(eng):
    once = oqronkit.schedule("once", run_at=datetime.fromisoformat("2030-01-01T09:00:00+00:00"), engine=eng)
    assert once.describe() == "once at 2030-01-01T09:00:00+00:00 (UTC)"
    weekly = oqronkit.schedule("weekly", rrule="FREQ=WEEKLY;BYDAY=MO;BYHOUR=9", timezone="Europe/Berlin", engine=eng)
    assert weekly.preview(1)[0].weekday() == 0 and weekly.preview(1)[0].hour == 9
    template = oqronkit.schedule("template", engine=eng)
    assert template.describe() == "only when triggered" and template.preview(3) == []
    assert template.definition.missed == "run-once"


@pytest.mark.parametrize(("options", "match"), [
    ({"every": 60, "rrule": "FREQ=DAILY"}, "at most one"),
    ({"run_at": datetime(2030, 1, 1)}, "timezone-aware"),
    ({"rrule": "FREQ=MINUTELY"}, "sub-daily"),
])
def test_invalid_schedules(eng, options, match):
    with pytest.raises(InvalidSchedule, match=match):
        oqronkit.schedule("s", engine=eng, **options)


def test_operating_an_unknown_definition(eng):
    with pytest.raises(UnknownSchedule):
        set_paused(eng, "cron", "ghost", True)


def test_the_public_api_is_exported():
    assert {"cron", "schedule", "Cron", "Schedule", "InvalidSchedule", "UnknownSchedule"} <= set(oqronkit.__all__)
