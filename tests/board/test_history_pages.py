"""The metrics history on the board (issue 37, item 4): charts on the overview, a
queue's page and a handler's page, range selection, deploy markers, the JSON API; read
from the leader's rollups through Engine.metrics_history."""

from __future__ import annotations

import re

from django.urls import reverse

from oqronkit.clock import now_ms
from oqronkit.history.deploys import record_deploy
from oqronkit.history.rollup import rollup
from oqronkit.namespaces import METRICS_STATE
from tests.board.seed import MINUTE, Board, put_runs, run_value


def seed_history(board: Board) -> None:
    """Ten emails runs (three failed) and four reports runs over the last half hour, rolled up."""
    now = now_ms()
    runs = [run_value(f"e{n}", name="emails", status="failed" if n < 3 else "completed", job_id=f"j{n}",
                      started=now - (5 + n * 2) * MINUTE) for n in range(10)]
    runs += [run_value(f"r{n}", name="reports", job_id=f"k{n}", started=now - (4 + n) * MINUTE) for n in range(4)]
    put_runs(board.plane, runs)
    board.plane.put(METRICS_STATE, "rollup", {"next": now - 40 * MINUTE - now % MINUTE})
    rollup(board.plane, now=now)
    record_deploy(board.plane, "v-<b>2</b>", worker="w1", at=now - 10 * MINUTE)


def history(board: Board, url: str, query: str = "") -> str:
    """The history panel of the page at ``url``: the page names the fragment that loads it
    after the page (htmx), and that fragment is the panel."""
    page = board.viewer.get(url + query).content.decode()
    assert 'data-testid="history-totals"' not in page  # the page itself reads no bucket
    found = re.search(r'data-testid="history-later".*?hx-get="([^"]+)"', page, re.S)
    assert found, page[:2000]
    fragment = board.viewer.get(url + found.group(1).replace("&amp;", "&"), headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and "<html" not in fragment.content.decode()
    return fragment.content.decode()


def totals(body: str) -> str:
    found = re.search(r'data-testid="history-totals">(.*?)<span', body, re.S)
    assert found, body[:2000]
    return " ".join(found.group(1).split())


def test_queue_page_charts_and_range_switch(board: Board):
    seed_history(board)
    url = reverse("oqronboard:queue-jobs", args=["emails"])
    body = history(board, url)
    assert totals(body) == "1440 minute buckets: 7 completed, 3 failed"
    assert 'data-testid="range-24h" aria-current="page"' in body
    assert body.count('<polyline class="p99"') >= 1 and 'data-testid="deploy-marker"' in body
    assert '<path class="ok" d="M' in body and '<rect class="ok"' not in body  # 1,440 buckets: paths
    assert "<b>2</b>" not in body and "v-&lt;b&gt;2&lt;/b&gt;" in body
    week = history(board, url, "?range=7d")
    assert sorted(totals(week).split(": ")[1].split(", ")) == ["3 failed", "7 completed"]  # open hours: live
    assert totals(week).startswith("168 hour buckets")
    assert 'data-testid="range-7d" aria-current="page"' in week
    assert board.viewer.get(url + "?range=2w").status_code == 400
    assert board.viewer.get(url + "?panel=history&range=2w", headers={"HX-Request": "true"}).status_code == 400
    assert reverse("oqronboard:handler", args=["emails"]) in board.viewer.get(url).content.decode()


def test_without_script_the_history_is_a_page_of_its_own(board: Board):
    seed_history(board)
    for url in (reverse("oqronboard:queue-jobs", args=["emails"]), reverse("oqronboard:home")):
        page = board.viewer.get(url + "?panel=history&range=24h").content.decode()
        assert "<html" in page and totals(page).startswith("1440 minute buckets")
        assert f'href="{url}?range=24h" data-testid="history-back"' in page
        assert 'href="?panel=history&amp;range=7d#history" data-testid="range-7d"' in page  # the tabs stay here


def test_handler_and_overview_pages(board: Board):
    seed_history(board)
    body = board.viewer.get(reverse("oqronboard:handler", args=["reports"]) + "?range=1h").content.decode()
    assert totals(body) == "60 minute buckets: 4 completed"
    assert body.count('<rect class="ok"') == 4 and "1 completed</title>" in body  # few buckets: a bar and tooltip each
    assert reverse("oqronboard:runs") + "?name=reports" in body
    overview = history(board, reverse("oqronboard:home"))
    assert totals(overview).startswith("168 hour buckets") and 'data-testid="range-7d" aria-current' in overview
    overview = history(board, reverse("oqronboard:home"), "?range=24h")
    assert totals(overview) == "1440 minute buckets: 11 completed, 3 failed"
    assert board.viewer.get(reverse("oqronboard:handler", args=["x" * 101])).status_code == 400


def test_api_answers_the_history_and_400s_bad_input(board: Board):
    seed_history(board)
    api = reverse("oqronboard:api-metrics-history")
    response = board.viewer.get(api, {"kind": "queue", "key": "emails", "range": "1h"})
    body = response.json()
    assert response.status_code == 200, body
    assert body["resolution"] == "minute" and len(body["points"]) == 60
    assert body["totals"] == {"failed": 3, "completed": 7}
    busy = [p for p in body["points"] if p["runs"]]
    assert busy and all(p["durationMs"]["p50"] == 1500.0 or abs(p["durationMs"]["p50"] - 1500) < 30 for p in busy)
    assert [d["version"] for d in body["deploys"]] == ["v-<b>2</b>"]
    assert board.viewer.get(api).json()["totals"] == {"failed": 3, "completed": 11}
    for bad in ({"kind": "queue"}, {"kind": "nope", "key": "x"}, {"kind": "all", "range": "5y"}):
        response = board.viewer.get(api, bad)
        assert response.status_code == 400, bad
        assert response.json()["error"]


def test_topic_group_page_charts_its_deliveries(board: Board):
    now = now_ms()
    runs = [run_value(f"g{n}", name="ship", job_id=f"d{n}", module="topic", started=now - (5 + n) * MINUTE,
                      status="failed" if n == 0 else "completed") for n in range(5)]
    for run in runs:
        run.update(topic="orders", group="shipping")
    put_runs(board.plane, runs)
    board.plane.put(METRICS_STATE, "rollup", {"next": now - 40 * MINUTE - now % MINUTE})
    rollup(board.plane, now=now)
    url = reverse("oqronboard:topic-group", args=["orders", "shipping"])
    body = board.viewer.get(url + "?range=1h").content.decode()
    assert totals(body) == "60 minute buckets: 4 completed, 1 failed"
    assert reverse("oqronboard:topic-log", args=["orders"]) in body
    other = board.viewer.get(reverse("oqronboard:topic-group", args=["orders", "billing"]) + "?range=1h")
    assert totals(other.content.decode()) == "60 minute buckets: no run"
    assert board.viewer.get(url + "?range=2w").status_code == 400
    assert board.viewer.get(reverse("oqronboard:topic-group", args=["orders", "x" * 101])).status_code == 400
