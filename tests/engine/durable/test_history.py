"""The metrics history on every durable backend: rollups equal the runs exactly, however
often and wherever a pass is cut short or run again; late runs; retention; deploy markers."""

from __future__ import annotations

import pytest

from oqronkit import RecordWrite
from oqronkit.errors import InvalidRecord
from oqronkit.history.buckets import DAY_MS, HOUR_MS, MINUTE_MS, bucket_id
from oqronkit.history.deploys import deploy_markers, record_deploy
from oqronkit.history.read import metrics_history
from oqronkit.history.rollup import LAG_MS, Retention, read_state, rollup
from oqronkit.namespaces import METRICS_DAY, METRICS_HOUR, METRICS_MINUTE, METRICS_STATE, RUNS
from oqronkit.queues.runs import finish_run, new_run

DAY0 = 1_799_971_200_000  # a UTC midnight
START = DAY0 + 23 * HOUR_MS  # the runs span 23:00 of day 0 to 00:40 of day 1
END = DAY0 + DAY_MS + 40 * MINUTE_MS


def make_run(name: str, started: int, status: str = "completed", *, duration: int = 120, attempts: int = 1,
             wait: int = 30, topic: tuple[str, str] | None = None) -> dict:
    run = dict(new_run(name=name, module="queue", trigger="queue", input=None, attempts=attempts, app="a",
                       environment="e", worker_id="w", job_id=f"j-{started}-{name}", started_at=started,
                       extra={"waitMs": wait, **({"topic": topic[0], "group": topic[1]} if topic else {})}))
    if status != "running":
        finish_run(run, status, at=started + duration)  # type: ignore[arg-type]
    return run


def workload() -> list[dict]:
    """Every 7 minutes from START to END: an emails run (every third failed, a retry), a
    reports run, and a topic delivery every 4th."""
    runs = []
    for n, at in enumerate(range(START + 5_000, END, 7 * MINUTE_MS)):
        runs.append(make_run("emails", at, "failed" if n % 3 == 0 else "completed", attempts=1 + n % 2,
                             duration=100 + n))
        runs.append(make_run("reports", at + 1_000, duration=5_000))
        if n % 4 == 0:
            runs.append(make_run("orders", at + 2_000, topic=("orders", "billing")))
    return runs


def write(durable, runs):
    durable.put_many(RecordWrite(RUNS, run["id"], run) for run in runs)


def start_at(durable, at):
    durable.put(METRICS_STATE, "rollup", {"next": at})


def roll_until_done(durable, now):
    while rollup(durable, now=now).minutes:
        pass


def counted(durable, namespace, start, scope, key):
    found = durable.get(namespace, bucket_id(start, scope, key))
    return dict(found.value["outcomes"]) if found else {}


def expected(runs, name=None):
    totals: dict[str, int] = {}
    for run in runs:
        if name is None or run["name"] == name:
            totals[run["status"]] = totals.get(run["status"], 0) + 1
    return totals


def assert_exact(durable, runs):
    """Minutes, hours and the closed day each add up to the runs, scope by scope."""
    for name in (None, "emails", "reports"):
        scope, key = ("all", "*") if name is None else ("handler", name)
        by_minute: dict[str, int] = {}
        for minute in range(START, END, MINUTE_MS):
            for status, count in counted(durable, METRICS_MINUTE, minute, scope, key).items():
                by_minute[status] = by_minute.get(status, 0) + count
        by_hour: dict[str, int] = {}
        for hour in (START, DAY0 + DAY_MS):
            for status, count in counted(durable, METRICS_HOUR, hour, scope, key).items():
                by_hour[status] = by_hour.get(status, 0) + count
        assert by_minute == by_hour == expected(runs, name)
        day0 = [r for r in runs if r["startedAt"] < DAY0 + DAY_MS]
        assert counted(durable, METRICS_DAY, DAY0, scope, key) == expected(day0, name)


def test_rollups_equal_the_runs(durable):
    runs = workload()
    write(durable, runs)
    start_at(durable, START)
    now = DAY0 + DAY_MS + 2 * HOUR_MS
    roll_until_done(durable, now)
    assert_exact(durable, runs)
    assert read_state(durable)["next"] == now - now % MINUTE_MS - LAG_MS
    history = metrics_history(durable, "queue", "emails", "24h", now=now)
    assert history.resolution == "minute" and len(history.points) == 1440
    assert history.totals() == expected(runs, "emails")
    retried = sum(1 for r in runs if r["name"] == "emails" and r["attempts"] > 1)
    assert sum(p.retries for p in history.points) == retried
    busy = [p for p in history.points if p.runs]
    assert busy and all(p.wait["p50"] == pytest.approx(30, rel=0.03) for p in busy)
    week = metrics_history(durable, "handler", "reports", "7d", now=now)
    assert week.resolution == "hour" and len(week.points) == 168
    assert week.totals() == expected(runs, "reports")
    assert max(p.duration["p99"] or 0 for p in week.points) == pytest.approx(5_000, rel=0.03)
    topic = metrics_history(durable, "topic", "orders/billing", "1y", now=now)
    assert topic.resolution == "day" and topic.totals() == expected(runs, "orders")  # today's too, live


def test_a_crash_between_writes_never_double_counts(durable, monkeypatch):
    runs = workload()
    write(durable, runs)
    start_at(durable, START)
    now = DAY0 + DAY_MS + 2 * HOUR_MS
    real_apply, calls = durable.apply, []

    def crashing_apply(**kwargs):
        calls.append(1)
        if len(calls) in (5, 19):
            raise RuntimeError("the leader died here")
        return real_apply(**kwargs)

    monkeypatch.setattr(durable, "apply", crashing_apply)
    for _ in range(2):
        with pytest.raises(RuntimeError):
            rollup(durable, now=now)
    monkeypatch.setattr(durable, "apply", real_apply)
    roll_until_done(durable, now)
    assert_exact(durable, runs)


def test_twice_and_two_leaders_in_turn(durable):
    runs = workload()
    write(durable, runs)
    start_at(durable, START)
    now = DAY0 + DAY_MS + 2 * HOUR_MS
    roll_until_done(durable, now)
    rollup(durable, now=now)  # once more: nothing new
    start_at(durable, START)  # a second leader that read an old watermark rolls it all again
    roll_until_done(durable, now)
    assert_exact(durable, runs)


def test_a_late_run_is_counted_when_it_finishes(durable):
    minute = START + 10 * MINUTE_MS
    long_run = make_run("reports", minute + 1_000, "running")
    write(durable, [long_run, make_run("emails", minute + 2_000)])
    start_at(durable, minute)
    rollup(durable, now=minute + 3 * MINUTE_MS)
    assert counted(durable, METRICS_MINUTE, minute, "all", "*") == {"running": 1, "completed": 1}
    assert read_state(durable)["open"] == [minute]
    finish_run(long_run, "completed", at=minute + 4 * MINUTE_MS)  # type: ignore[arg-type]
    write(durable, [long_run])
    rollup(durable, now=minute + 5 * MINUTE_MS)
    assert counted(durable, METRICS_MINUTE, minute, "all", "*") == {"completed": 2}
    assert read_state(durable)["open"] == []
    rollup(durable, now=START + 2 * HOUR_MS)  # the hour closes with the finished run in it
    assert counted(durable, METRICS_HOUR, START, "handler", "reports") == {"completed": 1}


def test_buckets_expire_by_resolution(durable):
    write(durable, [make_run("emails", START + 5_000)])
    start_at(durable, START)
    retention = Retention(minute_ms=HOUR_MS, hour_ms=DAY_MS, day_ms=2 * DAY_MS)
    while rollup(durable, retention=retention, now=DAY0 + DAY_MS + HOUR_MS).minutes:
        pass
    assert durable.get(METRICS_MINUTE, bucket_id(START, "all", "*")) is not None
    durable.prune_expired(now=START + 3 * HOUR_MS)
    assert durable.get(METRICS_MINUTE, bucket_id(START, "all", "*")) is None
    assert durable.get(METRICS_HOUR, bucket_id(START, "all", "*")) is not None
    durable.prune_expired(now=START + 2 * DAY_MS)
    assert durable.get(METRICS_HOUR, bucket_id(START, "all", "*")) is None
    assert durable.get(METRICS_DAY, bucket_id(DAY0, "all", "*")) is not None


def test_deploy_markers_only_when_the_version_changes(durable):
    assert record_deploy(durable, "v1", worker="w1", at=START)
    assert not record_deploy(durable, "v1", worker="w2", at=START + 1)
    assert record_deploy(durable, "v2", worker="w2", at=START + 2)
    markers = deploy_markers(durable, since=START)
    assert [(m.version, m.previous) for m in markers] == [("v1", None), ("v2", "v1")]
    assert [m.version for m in metrics_history(durable, "all", "*", "1h", now=START + 60_000).deploys] == \
        ["v1", "v2"]


@pytest.mark.parametrize(("scope", "key", "span"), [("nope", "x", "1h"), ("queue", "x", "2h"), ("queue", "", "1h")])
def test_bad_requests_name_the_problem(durable, scope, key, span):
    with pytest.raises(InvalidRecord):
        metrics_history(durable, scope, key, span)


def test_hour_and_day_charts_reach_the_present(durable):
    """The current hour and day are not merged yet: a chart computes them from their parts."""
    runs = workload()
    write(durable, runs)
    start_at(durable, START)
    now = END + 5 * MINUTE_MS  # 00:45 of day 1: its first hour and the day are still open
    roll_until_done(durable, now)
    assert counted(durable, METRICS_HOUR, DAY0 + DAY_MS, "all", "*") == {}  # not merged yet
    week = metrics_history(durable, "handler", "emails", "7d", now=now)
    assert week.totals() == expected(runs, "emails")
    assert week.points[-1].runs == len([r for r in runs if r["name"] == "emails" and r["startedAt"] >= DAY0 + DAY_MS])
    year = metrics_history(durable, "all", "*", "1y", now=now)
    assert year.totals() == expected(runs) and year.points[-1].runs > 0


def test_after_a_gap_the_minutes_are_rolled_once_more_for_late_writes(durable):
    """A leader away 10 minutes (an outage): a run its worker wrote only after the next
    pass (a write-behind backlog) is counted by the recheck five minutes later."""
    first = START + 10 * MINUTE_MS
    start_at(durable, first)
    rollup(durable, now=first + 2 * MINUTE_MS)
    back = first + 12 * MINUTE_MS
    rollup(durable, now=back)  # the gap: minutes up to back - 2 min rolled, with no run yet
    late = make_run("emails", first + 6 * MINUTE_MS + 1_000)
    write(durable, [late])
    for minutes in range(1, 5):  # passes every minute again
        rollup(durable, now=back + minutes * MINUTE_MS)
    assert counted(durable, METRICS_MINUTE, first + 6 * MINUTE_MS, "all", "*") == {}  # not yet
    assert read_state(durable)["recheck"]
    rollup(durable, now=back + 5 * MINUTE_MS)
    assert counted(durable, METRICS_MINUTE, first + 6 * MINUTE_MS, "all", "*") == {"completed": 1}
    assert read_state(durable)["recheck"] == []


def test_open_runs_are_settled_by_id_without_reading_the_minute_again(durable, monkeypatch):
    """A minute's open runs are looked up by id on later passes: no range read of the
    minute; a queued run that starts stays listed; settling twice moves a run once."""
    minute = START + 10 * MINUTE_MS
    long_run, waiting = make_run("reports", minute + 1_000, "running"), make_run("emails", minute + 3_000, "running")
    waiting["status"] = "queued"
    write(durable, [long_run, waiting, make_run("emails", minute + 2_000)])
    start_at(durable, minute)
    rollup(durable, now=minute + 3 * MINUTE_MS)
    assert counted(durable, METRICS_MINUTE, minute, "all", "*") == {"running": 1, "queued": 1, "completed": 1}
    real_list = durable.list

    def no_reread(namespace, **kw):
        assert kw.get("started_from") != minute, "the minute's runs were read again"
        return real_list(namespace, **kw)

    monkeypatch.setattr(durable, "list", no_reread)
    finish_run(long_run, "failed", at=minute + 4 * MINUTE_MS)  # type: ignore[arg-type]
    waiting["status"] = "running"
    write(durable, [long_run, waiting])
    for _ in range(2):  # the same pass twice: the run moves once
        rollup(durable, now=minute + 5 * MINUTE_MS)
    assert counted(durable, METRICS_MINUTE, minute, "all", "*") == {"failed": 1, "running": 1, "completed": 1}
    assert counted(durable, METRICS_MINUTE, minute, "handler", "reports") == {"failed": 1}
    assert read_state(durable)["open"] == [minute]
    finish_run(waiting, "completed", at=minute + 6 * MINUTE_MS)  # type: ignore[arg-type]
    write(durable, [waiting])
    rollup(durable, now=minute + 7 * MINUTE_MS)
    assert counted(durable, METRICS_MINUTE, minute, "handler", "emails") == {"completed": 2}
    assert read_state(durable)["open"] == []
    history = metrics_history(durable, "handler", "reports", "24h", now=minute + 7 * MINUTE_MS)
    assert history.totals() == {"failed": 1} and any(p.duration["p50"] for p in history.points)


def test_too_many_open_runs_roll_the_minute_whole(durable, monkeypatch):
    from oqronkit.history import writes

    monkeypatch.setattr(writes, "OPEN_LISTED", 1)
    minute = START + 10 * MINUTE_MS
    runs = [make_run("reports", minute + n * 1_000, "running") for n in range(3)]
    write(durable, runs)
    start_at(durable, minute)
    rollup(durable, now=minute + 3 * MINUTE_MS)
    for run in runs:
        finish_run(run, "completed", at=minute + 4 * MINUTE_MS)  # type: ignore[arg-type]
    write(durable, runs)
    rollup(durable, now=minute + 5 * MINUTE_MS)
    assert counted(durable, METRICS_MINUTE, minute, "all", "*") == {"completed": 3}


def test_a_first_pass_reads_no_empty_minute(durable, monkeypatch):
    """A first pass looks back an hour: the minutes before the first run cost one probe
    of the startedAt index, not one read each; the watermark still reaches the present."""
    now = START + 2 * HOUR_MS
    closed_until = now - now % MINUTE_MS - LAG_MS
    runs = [make_run("emails", closed_until - 10 * MINUTE_MS + 5_000),
            make_run("emails", closed_until - 4 * MINUTE_MS + 5_000, "failed")]
    write(durable, runs)
    reads: list[int | None] = []
    listing = durable.list

    def counting(*args, **kwargs):
        reads.append(kwargs.get("started_from"))
        return listing(*args, **kwargs)

    monkeypatch.setattr(durable, "list", counting)
    report = rollup(durable, now=now)
    assert len(reads) == 1 + 10  # the probe, then the ten minutes from the first run's on
    assert report.minutes == 10 and report.runs == 2
    assert read_state(durable)["next"] == closed_until
    minute = closed_until - 10 * MINUTE_MS
    assert counted(durable, METRICS_MINUTE, minute, "handler", "emails") == {"completed": 1}
    assert counted(durable, METRICS_MINUTE, minute + 6 * MINUTE_MS, "handler", "emails") == {"failed": 1}
    reads.clear()
    later = now + 30 * MINUTE_MS  # thirty empty minutes: the probe and the last of them
    assert rollup(durable, now=later).minutes == 1 and len(reads) == 2
    assert read_state(durable)["next"] == later - later % MINUTE_MS - LAG_MS
