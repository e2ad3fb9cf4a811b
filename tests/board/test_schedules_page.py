"""The schedules page: crons and schedules with next fires, last run and counters;
pause, resume and run-now through the engine's scheduler API (operators, audited); each
definition's run history."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from oqronkit.clock import now_ms
from oqronkit.scheduler.control import store_definition, update_control
from oqronkit.scheduler.definition import build_definition
from tests.board.seed import MINUTE, Board, error, put_runs, run_value

EVIL = "<script>alert('pwned')</script>"
EVIL_ATTR = '"><img src=x onerror=alert(1)>'


def declare(board: Board, kind: str, name: str, **options) -> None:
    """Store a definition and its control record exactly as a worker does."""
    now = now_ms()
    store_definition(board.scope.engine, build_definition(kind, name, now=now, **options), now)


def set_state(board: Board, kind: str, name: str, **changes) -> None:
    update_control(board.scope.engine, kind, name, lambda value: value.update(changes))


def cron_run(run_id: str, name: str, *, started: int, status: str = "completed", late: int = 0,
             module: str = "cron") -> dict:
    run = run_value(run_id, name=name, module=module, status=status, started=started,
                    error=error("nightly failed") if status == "failed" else None)
    run.update(definition=name, slotAt=started - late, lateMs=late)
    return run


def seed(board: Board) -> None:
    now = now_ms()
    declare(board, "cron", "nightly", expression="0 3 * * *", timezone="Europe/Berlin", handler="app.nightly")
    declare(board, "cron", "ticker", every=30)
    declare(board, "schedule", "report", rrule="FREQ=WEEKLY;BYDAY=MO", timezone="America/New_York")
    put_runs(board.plane, [
        cron_run("cron:nightly:1", "nightly", started=now - 3 * MINUTE, status="failed", late=5000),
        cron_run("cron:nightly:2", "nightly", started=now - 2 * MINUTE, late=100),
        cron_run("cron:ticker:1", "ticker", started=now - MINUTE),
    ])
    set_state(board, "cron", "nightly", lastRunId="cron:nightly:1", lastFiredAt=now - 3 * MINUTE,
              counters={"missed": 4, "skipped": 2, "run": 9, "manual": 1})
    set_state(board, "cron", "ticker", paused=True, pausedAt=now)


def row_of(body: str, name: str) -> str:
    match = re.search(rf'<tr data-row data-testid="schedule-row-{re.escape(name)}">(.*?)</tr>', body, re.S)
    assert match, name
    return match.group(1)


def test_every_cron_and_schedule_with_next_fires_last_run_and_counters(board: Board):
    seed(board)
    response = board.viewer.get(reverse("oqronboard:schedules"))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'data-testid="nav-schedules"' in body and 'aria-current="page">Schedules' in body
    assert not re.search(r"\sstyle=", body) and not re.search(r"\son[a-z]+=", body)  # the CSP allows neither

    nightly = row_of(body, "nightly")
    assert '<span data-testid="description-nightly">At 03:00 every day</span>' in nightly
    assert '<span class="muted small">Europe/Berlin</span>' in nightly
    fires = re.findall(r'<time datetime="([^"]+)">([^<]+)</time>', nightly.split('data-testid="fires-nightly"')[1])
    assert len(fires) >= 5
    for iso, text in fires[:5]:  # 03:00 on the wall clock in Berlin, whatever the offset
        assert "T03:00:00" in iso and iso[-6:] in ("+01:00", "+02:00") and "03:00:00 CE" in text
    assert 'href="/runs/cron:nightly:1/"' in nightly and "status-failed" in nightly  # the last run and its status
    assert re.search(r'data-testid="counters-nightly">4 · 2', nightly)  # missed · skipped
    assert re.search(r'data-testid="late-nightly"><span class="badge warn">1</span> <span class="muted small">of 2',
                     nightly)
    assert 'data-testid="active-schedule-nightly"' in nightly
    assert reverse("oqronboard:cron-history", args=["nightly"]) in nightly

    ticker = row_of(body, "ticker")
    assert "every 30 seconds" in ticker and 'data-testid="paused-schedule-ticker"' in ticker
    assert "not while paused" in ticker and 'data-testid="last-run-ticker"' not in ticker  # no lastRunId yet

    report = row_of(body, "report")
    assert "America/New_York" in report and "schedule" in report
    iso_dates = re.findall(r'<time datetime="([^"]+)"', report)
    assert len(iso_dates) == 5 and all(iso[-6:] in ("-05:00", "-04:00") for iso in iso_dates)


def test_the_live_panel_is_a_named_partial_within_three_queries(board: Board):
    seed(board)
    page = board.viewer.get(reverse("oqronboard:schedules")).content.decode()
    assert 'hx-get="/schedules/?panel=list"' in page and "data-poll" in page
    with CaptureQueriesContext(connections[board.db.alias]) as captured:
        response = board.viewer.get(reverse("oqronboard:schedules"), {"panel": "list"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body and 'data-testid="schedule-row-nightly"' in body
    queries = [q["sql"] for q in captured.captured_queries if "oqron_" in q["sql"]]
    assert len(queries) <= 3, queries
    for query in queries:
        if "COUNT(" in query and "oqron_runs" in query:
            assert "startedAt" in query and ">=" in query, query


def test_no_definitions_yet(board: Board):
    body = board.viewer.get(reverse("oqronboard:schedules")).content.decode()
    assert "No crons or schedules yet" in body


def test_pause_resume_and_run_now_for_operators_are_audited(board: Board):
    seed(board)
    page = board.operator.get(reverse("oqronboard:schedules")).content.decode()
    nightly = row_of(page, "nightly")
    assert 'data-testid="pause-schedule-nightly"' in nightly and 'data-testid="run-now-nightly"' in nightly
    assert 'data-testid="resume-schedule-nightly"' not in nightly
    assert 'data-testid="resume-schedule-ticker"' in row_of(page, "ticker")

    response = board.operator.post(reverse("oqronboard:cron-action", args=["nightly", "pause"]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and json.loads(response["HX-Trigger"]) == {"board:refresh": {}}
    body = response.content.decode()
    assert "<html" not in body and 'data-testid="resume-schedule-nightly"' in body and "Cron nightly paused." in body
    assert 'name="next" value="/schedules/"' in body  # not the action's own URL
    assert board.plane.get("cron_durable", "nightly").value["paused"] is True
    assert board.plane.get("cron_durable", "nightly").value["counters"]["missed"] == 4  # the rest is kept

    response = board.operator.post(reverse("oqronboard:cron-action", args=["nightly", "resume"]),
                                   {"next": "/schedules/"})
    assert response.status_code == 302 and response["Location"] == "/schedules/"
    assert board.plane.get("cron_durable", "nightly").value["paused"] is False

    response = board.operator.post(reverse("oqronboard:schedule-action", args=["report", "run-now"]),
                                   HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "1 run-now pending" in response.content.decode()
    manual = board.plane.get("schedule_durable", "report").value["manual"]
    assert len(manual) == 1

    entries = sorted((r.value for r in board.plane.list("audit").records), key=lambda v: v["id"])
    assert [(e["action"], e["target"], e["ok"]) for e in entries] == [
        ("pause", "cron nightly", True), ("resume", "cron nightly", True), ("run-now", "schedule report", True)]
    assert entries[2]["runId"] == f"schedule:report:manual:{manual[0]['id']}"
    assert all(e["user"].startswith("olivia-") for e in entries)
    audit_page = board.viewer.get(reverse("oqronboard:audit")).content.decode()
    assert "schedule report" in audit_page


def test_run_now_refused_when_too_many_wait_is_audited_as_failed(board: Board):
    seed(board)
    set_state(board, "cron", "ticker", manual=[{"id": str(i), "requestedAt": 1, "payload": None} for i in range(20)])
    response = board.operator.post(reverse("oqronboard:cron-action", args=["ticker", "run-now"]),
                                   HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "run-now requests waiting" in response.content.decode()
    [entry] = [r.value for r in board.plane.list("audit").records]
    assert entry["ok"] is False and entry["action"] == "run-now"


def test_unknown_definitions_and_actions(board: Board):
    seed(board)
    assert board.operator.post(reverse("oqronboard:cron-action", args=["nope", "pause"])).status_code == 404
    assert board.operator.post(reverse("oqronboard:cron-action", args=["nightly", "explode"])).status_code == 404
    assert board.operator.get(reverse("oqronboard:cron-action", args=["nightly", "pause"])).status_code == 405
    assert board.viewer.get(reverse("oqronboard:cron-history", args=["nope"])).status_code == 404
    assert board.plane.list("audit").records == []


def test_viewers_see_no_buttons_and_get_403(board: Board):
    seed(board)
    for url in (reverse("oqronboard:schedules"), reverse("oqronboard:cron-history", args=["nightly"]),
                reverse("oqronboard:cron-history", args=["ticker"])):
        body = board.viewer.get(url).content.decode()
        for hook in ('data-testid="pause-schedule-', 'data-testid="resume-schedule-', 'data-testid="run-now-'):
            assert hook not in body, (url, hook)
        assert 'data-operator="0"' in body
    for name, kind, action in (("nightly", "cron", "pause"), ("ticker", "cron", "resume"),
                               ("nightly", "cron", "run-now"), ("report", "schedule", "run-now")):
        response = board.viewer.post(reverse(f"oqronboard:{kind}-action", args=[name, action]))
        assert response.status_code == 403, (name, action)
    assert board.plane.get("cron_durable", "nightly").value["paused"] is False
    assert board.plane.get("cron_durable", "ticker").value["paused"] is True
    assert board.plane.get("cron_durable", "nightly").value["manual"] == []
    assert board.plane.get("schedule_durable", "report").value["manual"] == []
    assert board.plane.list("audit").records == []


def test_names_descriptions_and_handlers_are_escaped(board: Board):
    now = now_ms()
    # Rows the engine would refuse to write, stored raw: the page must still escape them.
    board.plane.put("cron", "evil", {"kind": "cron", "name": "evil", "expression": "0 3 * * *",
                                     "description": EVIL, "timezone": EVIL_ATTR, "handler": EVIL})
    board.plane.put("cron", EVIL, {"kind": "cron", "name": EVIL, "expression": "0 3 * * *", "description": "x"})
    board.plane.put("schedule", EVIL_ATTR, {"kind": "schedule", "name": EVIL_ATTR, "timezone": "Nowhere/Evil",
                                            "description": EVIL_ATTR})
    board.plane.put("cron_durable", "evil", {"paused": False, "lastRunId": "evil-run", "counters": {}})
    put_runs(board.plane, [cron_run("evil-run", "evil", started=now - MINUTE, status="failed")])
    for url, client in ((reverse("oqronboard:schedules"), board.operator), (reverse("oqronboard:cron-history",
                                                                                    args=["evil"]), board.viewer)):
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        assert "<script>alert" not in body and "<img src=x" not in body, url
        assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in body, url
    body = board.operator.get(reverse("oqronboard:schedules")).content.decode()
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in body
    assert "Cannot read this definition" in body  # the unknown time zone, said instead of a 500


def test_history_is_newest_first_with_keyset_pages(board: Board):
    seed(board)
    now = now_ms()
    runs = [cron_run(f"cron:nightly:h{i:03d}", "nightly", started=now - (i + 10) * MINUTE) for i in range(60)]
    runs += [cron_run("other-name", "ticker", started=now - 5 * MINUTE),
             cron_run("other-module", "nightly", started=now - 5 * MINUTE, module="queue")]
    put_runs(board.plane, runs)
    url = reverse("oqronboard:cron-history", args=["nightly"])
    page = board.viewer.get(url)
    body = page.content.decode()
    assert page.status_code == 200 and 'data-testid="schedule-state-nightly"' in body
    ids = re.findall(r'data-testid="history-run-row" data-run-id="([^"]+)"', body)
    assert ids[:3] == ["cron:nightly:2", "cron:nightly:1", "cron:nightly:h000"] and len(ids) == 50
    assert "other-name" not in ids and "other-module" not in ids
    assert "/runs/?module=cron&amp;name=nightly&amp;window=30d" in body
    more = re.search(r'data-testid="load-more"', body) and re.search(r'href="\?(cursor=[^"]+)"', body).group(1)
    rest = board.viewer.get(f"{url}?{more}", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in rest
    rest_ids = re.findall(r'data-testid="history-run-row" data-run-id="([^"]+)"', rest)
    assert rest_ids == [f"cron:nightly:h{i:03d}" for i in range(48, 60)] and "load-more" not in rest
    state = board.viewer.get(url, {"panel": "state"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in state and 'data-testid="counters-nightly">4 missed' in state
    assert board.viewer.get(url, {"cursor": "garbage!"}).status_code == 400


def test_operators_act_from_the_history_page(board: Board):
    seed(board)
    body = board.operator.get(reverse("oqronboard:cron-history", args=["nightly"])).content.decode()
    assert 'data-testid="pause-schedule-nightly"' in body and 'data-testid="run-now-nightly"' in body


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "post"])
def test_login_required(client: Client, method: str):
    login = reverse("login")
    for url in (reverse("oqronboard:schedules"), reverse("oqronboard:cron-history", args=["nightly"]),
                reverse("oqronboard:schedule-history", args=["report"]), reverse("oqronboard:cron-action",
                                                                                 args=["nightly", "pause"]),
                reverse("oqronboard:schedule-action", args=["report", "run-now"])):
        response = getattr(client, method)(url)
        assert response.status_code == 302 and response["Location"].startswith(login), url
