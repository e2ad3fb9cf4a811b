"""Issue 37 item 6 (every page under 50 ms at scale): what was changed for speed shows
what it showed before. The timing itself is bench/board_pages.py's."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal

from django.db import connections
from django.template import Context, Template
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from oqronboard.base.cursors import decode_cursor
from oqronboard.charts import compact_bars, stacked_bars
from oqronboard.jobs.queries import DeadFilters, dead_export_rows, dead_list, dead_queryset
from oqronboard.templatetags.board import JSON_MAX_CHARS, TRUNCATED, _json_chunks, ms_time, pretty_json
from oqronboard.views.trace import Links, rows_html
from oqronkit.clock import now_ms
from oqronkit.trace import TraceEntry
from tests.board.seed import Board, dead_job, put_jobs, queue_control
from tests.board.test_planes_page import lose_jobs, wait_clean
from tests.board.test_topics_pages import cell, message_ids
from tests.board.topic_seed import publish

# _chart.html as it was, a template loop (the chart's markup now comes from Chart.svg).
CHART_TEMPLATE = """<svg class="chart" viewBox="0 0 {{ chart.view_width|default:chart.width }} \
{% if chart.view_width %}100{% else %}{{ chart.height }}{% endif %}" width="{{ chart.width }}" \
height="{{ chart.height }}" role="img" aria-label="{{ chart.label }}" preserveAspectRatio="none">
  <title>{{ chart.label }}</title>
  {% if not chart.view_width %}<line class="axis" x1="0" y1="{{ chart.height }}" x2="{{ chart.width }}" \
y2="{{ chart.height }}"></line>{% endif %}
  {% for bar in chart.bars %}<rect class="{{ bar.css }}" x="{{ bar.x }}" y="{{ bar.y }}" width="{{ bar.width }}" \
height="{{ bar.height }}"><title>{{ bar.title }}</title></rect>{% endfor %}{% for path in chart.paths %}\
<path class="{{ path.css }}" d="{{ path.d }}"></path>{% endfor %}
</svg>"""


def test_a_chart_draws_the_markup_the_template_loop_drew():
    buckets = [(0, 0), (3, 1), (12, 0), (7, 7), (1, 0), (0, 2)]
    labels = [f'bucket <{i}> "& more"' for i in range(len(buckets))]
    for chart in (stacked_bars(buckets, labels=labels), stacked_bars(buckets, labels=labels, width=480, height=80,
                                                                     gap=2), stacked_bars([(0, 0)], labels=["x"]),
                  compact_bars(buckets * 100, width=480, height=80, label='600 buckets <"&">')):
        before = Template(CHART_TEMPLATE).render(Context({"chart": chart}))
        assert _squash(chart.svg) == _squash(before)
        assert "<rect" in before or "<path" in before or not chart.bars


def _squash(html: str) -> str:
    return re.sub(r"\s+", " ", html).replace("&#x27;", "&#39;").strip()


def live_panel(board: Board) -> str:
    return board.viewer.get(reverse("oqronboard:home"), {"panel": "live"}, HTTP_HX_REQUEST="true").content.decode()


def waiting(body: str, queue: str) -> str:
    return body.split(f'data-testid="waiting-{queue}">')[1].split("<")[0]


def test_the_overview_shares_the_hot_planes_depths_and_says_when_it_read_them(board: Board, settings):
    queue_control(board.plane, "emails")
    board.scope.queue("emails").add({"n": 1})
    assert 'data-testid="read-at"' not in live_panel(board)  # nothing shared: nothing to say
    settings.OQRON_BOARD_CACHE_SECONDS = 30
    body = live_panel(board)
    assert waiting(body, "emails") == "1"
    assert re.search(r'data-testid="read-at">Read at <time datetime="[^"]+">[^<]+</time>: every viewer shares '
                     r"these figures for up to 30 s\.", body)
    board.scope.queue("emails").add({"n": 2})
    assert waiting(live_panel(board), "emails") == "1"  # shared, as the page says
    assert board.operator.post(reverse("oqronboard:queue-pause", args=["emails"])).status_code in (200, 302)
    assert waiting(live_panel(board), "emails") == "2"  # an action: read afresh
    settings.OQRON_BOARD_CACHE_SECONDS = 0
    board.scope.queue("emails").add({"n": 3})
    assert waiting(live_panel(board), "emails") == "3"


def dead_panel(board: Board, panel: str) -> str:
    return board.viewer.get(reverse("oqronboard:dead-letters"), {"panel": panel},
                            HTTP_HX_REQUEST="true").content.decode()


def test_the_dead_letter_depth_and_groups_are_shared_and_labelled(board: Board, settings):
    settings.OQRON_BOARD_CACHE_SECONDS = 30
    put_jobs(board.plane, [dead_job("emails", "d1", message="boom 1")])
    depth, groups = dead_panel(board, "depth"), dead_panel(board, "groups")
    assert 'data-testid="dlq-depth-emails">1<' in depth and 'data-testid="read-at"' in depth
    assert re.search(r'<td class="num">1</td>', groups) and 'data-testid="read-at"' in groups
    put_jobs(board.plane, [dead_job("emails", "d2", message="lost", kind="KeyError")])
    assert 'data-testid="dlq-depth-emails">1<' in dead_panel(board, "depth")  # shared
    assert "KeyError" not in dead_panel(board, "groups")
    page = board.viewer.get(reverse("oqronboard:dead-letters")).content.decode()
    assert "d2" in page and 'data-testid="dlq-depth-emails">1<' in page  # the list itself is never shared
    api = board.viewer.get(reverse("oqronboard:api-dead")).json()
    assert api["depths"] == {"emails": 1} and api["depths_read_at"] <= now_ms() and "groups_read_at" in api
    assert {r["id"] for r in api["results"]} == {"d1", "d2"}  # the API's list: fresh, its counts: shared, dated
    assert board.operator.post(reverse("oqronboard:dead-retry"), {"mode": "ids", "ids": ["emails:d1"]}).status_code \
        in (200, 302)
    assert 'data-testid="dlq-depth-emails">1<' in dead_panel(board, "depth")  # d1 retried, d2 counted: afresh
    groups = dead_panel(board, "groups")
    assert "KeyError" in groups and "ValueError" not in groups


def test_the_export_reads_keyset_pages_the_first_before_the_rest(board: Board):
    # 11 dead letters, three of them dying at the same millisecond (the id breaks the tie).
    now = now_ms()
    died = [now - i * 1000 for i in range(8)] + [now - 50_000] * 3
    put_jobs(board.plane, [dead_job("emails" if i % 2 else "sms", f"d{i:02d}", died=at, message=f"boom {i}")
                           for i, at in enumerate(died)])
    scope = board.scope
    whole = [row["id"] for row in dead_queryset(scope, DeadFilters()).values("id")]
    assert len(whole) == 11
    for chunk in (1, 3, 11, 500):
        assert [row["id"] for row in dead_export_rows(scope, DeadFilters(), limit=100, chunk=chunk)] == whole
    assert [row["id"] for row in dead_export_rows(scope, DeadFilters(), limit=7, chunk=3)] == whole[:7]
    emails = [row["id"] for row in dead_queryset(scope, DeadFilters(queue="emails")).values("id")]
    assert [row["id"] for row in dead_export_rows(scope, DeadFilters(queue="emails"), limit=100, chunk=2)] == emails
    rows = dead_export_rows(scope, DeadFilters(), limit=100, chunk=3)
    with CaptureQueriesContext(connections[board.db.alias]) as queries:
        next(rows)
    assert len(queries.captured_queries) == 1 and "LIMIT 3" in queries.captured_queries[0]["sql"]


def test_a_queues_counts_are_shared_and_labelled_its_jobs_are_not(board: Board, settings):
    settings.OQRON_BOARD_CACHE_SECONDS = 30
    queue_control(board.plane, "emails")
    board.scope.queue("emails").add({"n": 1})
    url = reverse("oqronboard:queue-jobs", args=["emails"])
    body = board.viewer.get(url, {"status": "waiting"}).content.decode()
    assert 'data-testid="count-waiting">1<' in body and 'data-testid="read-at"' in body
    board.scope.queue("emails").add({"n": 2})
    body = board.viewer.get(url, {"status": "waiting"}).content.decode()
    assert 'data-testid="count-waiting">1<' in body  # the counts: shared, as the page says
    assert body.count('data-testid="job-row"') == 2  # the list: read afresh
    api = board.viewer.get(reverse("oqronboard:api-queue", args=["emails"])).json()
    assert api["counts"]["waiting"] == 2 and "counts_at" not in api  # the API: fresh, its shape unchanged


def test_the_topics_figures_are_shared_and_labelled_the_log_is_not(board: Board, settings):
    settings.OQRON_BOARD_CACHE_SECONDS = 30
    orders = publish(board, count=3)
    body = board.viewer.get(reverse("oqronboard:topics")).content.decode()
    assert cell(body, "retained-orders") == "3" and 'data-testid="read-at"' in body
    publish(board, count=2)
    body = board.viewer.get(reverse("oqronboard:topics")).content.decode()
    assert cell(body, "retained-orders") == "3"  # shared, as the page says
    log = board.viewer.get(reverse("oqronboard:topic-log", args=["orders"])).content.decode()
    assert len(message_ids(log)) == 5 and 'data-testid="read-at"' in log  # the log itself: read afresh
    assert orders.ids[0] in log
    settings.OQRON_BOARD_CACHE_SECONDS = 0
    assert cell(board.viewer.get(reverse("oqronboard:topics")).content.decode(), "retained-orders") == "5"


def test_the_plane_drift_is_shared_and_labelled_and_afresh_after_the_reconciler(board: Board, settings):
    settings.OQRON_BOARD_CACHE_SECONDS = 30
    lose_jobs(board.scope, "mail", 3)
    body = board.viewer.get(reverse("oqronboard:planes")).content.decode()
    assert 'data-testid="unsignalled-mail">3' in body and 'data-testid="read-at"' in body
    first = board.viewer.get(reverse("oqronboard:api-planes")).json()
    lose_jobs(board.scope, "mail", 2)
    assert board.viewer.get(reverse("oqronboard:api-planes")).json()["at"] == first["at"]  # shared
    assert 'data-testid="unsignalled-mail">3' in board.viewer.get(reverse("oqronboard:planes")).content.decode()
    board.operator.post(reverse("oqronboard:planes-reconcile"))
    assert board.viewer.get(reverse("oqronboard:api-planes")).json()["at"] > first["at"]  # the action: afresh
    settings.OQRON_BOARD_CACHE_SECONDS = 0
    assert wait_clean(board.viewer)["clean"]  # the reconciler's thread is done before the planes close


def _nest(depth: int) -> object:
    value: object = "bottom"
    for _ in range(depth):
        value = {"k": value}
    return value


PRETTY_CASES = [
    {}, [], None, 1, 1.5, "x", True, {"a": 1, "b": [1, 2, {"c": None}], "d": {}, "e": []},
    {"deep": (deep := [[[[["x"]]]]])}, {"é": "ünïcode", "html": "<b>&</b>"}, [float("nan"), 10**30],
    {"decimal": Decimal("1.50"), "when": datetime(2026, 1, 2, tzinfo=UTC), "set": {1}},
    {1: "int key"}, {True: "bool key"}, ("tuple", 1), {"too": _nest(40)}, list(range(6000)), deep,
    ["x" * 300_000],
]


def test_pretty_json_writes_what_it_wrote_piece_by_piece():
    for value in PRETTY_CASES:
        assert pretty_json(value) == _pieces(value), value


def _pieces(value: object) -> str:
    """pretty_json as it was: joined pieces, cut at JSON_MAX_CHARS."""
    parts, size = [], 0
    for chunk in _json_chunks(value, 0):
        if size + len(chunk) > JSON_MAX_CHARS:
            return "".join([*parts, chunk[: JSON_MAX_CHARS - size], "\n" + TRUNCATED])
        parts.append(chunk)
        size += len(chunk)
    return "".join(parts)


def test_a_text_search_finds_the_same_page_newest_first_or_through_the_index(board: Board, monkeypatch):
    from oqronboard.jobs import search as text_search

    now = now_ms()
    common = [dead_job("emails", f"c{i:03d}", died=now - i, message=f"card declined {i}") for i in range(0, 120, 2)]
    rare = [dead_job("sms", f"r{i:03d}", died=now - i, message=f"gateway timed out {i}") for i in range(1, 120, 2)]
    rare.append(dead_job("sms", "old-rare", died=now - 10_000, message="needle in the hay"))
    put_jobs(board.plane, [*common, *rare])

    def pages(search: str) -> list[list[str]]:
        found, cursor = [], None
        while True:
            rows, next_cursor = dead_list(board.scope, DeadFilters(search=search, cursor=cursor), limit=7)
            found.append([r["id"] for r in rows])
            if next_cursor is None:
                return found
            cursor = decode_cursor(next_cursor)

    expected = {search: [[r["id"] for r in dead_queryset(board.scope, DeadFilters(search=search)).values("id")]]
                for search in ("DECLINED", "needle", "zzz", "timed out")}
    for window in (5, 40, 2000):  # the window holds the page, part of it, or everything
        monkeypatch.setattr(text_search, "SEARCH_WINDOW", window)
        for search, [ids] in expected.items():
            assert [i for page in pages(search) for i in page] == ids, (window, search)
    assert expected["needle"] == [["old-rare"]] and len(expected["DECLINED"][0]) == 60


def test_a_trace_rows_titles_are_each_entrys_own_second():
    base = 1_765_000_000_000
    ats = [base, base + 999, base + 1000, base + 1500, base + 61_000, base + 61_999, 0, 999]
    entries = [TraceEntry(kind="run", key=f"run:r{i}", id=f"r{i}", at=at, title="t",
                          status="completed" if i % 2 else None) for i, at in enumerate(ats)]
    html = str(rows_html(entries, base, Links()))
    titles = re.findall(r'<td class="num" title="([^"]*)">', html)
    assert titles == [ms_time(at) for at in ats]
    assert html.count('<span class="status status-completed">completed</span>') == 4
