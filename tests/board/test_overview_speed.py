"""Issue 37 item 6 for the overview, the Jobs page and the queues API: what was changed
for speed shows what it showed before (the timing itself is bench/board_pages.py's)."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from oqronboard import overview
from tests.board.seed import Board, dead_job, job_value, put_jobs, put_runs, queue_control, run_value

# Names a URL must quote (a space, '&', '#', a non-ASCII letter): the links reversed once per page
# or once per row must still name each queue exactly.
QUEUES = ["emails", "mail out", "a&b#1", "café"]


def seed_queues(board: Board) -> None:
    for name in QUEUES:
        queue_control(board.plane, name)
        put_jobs(board.plane, [job_value(name, f"w-{i}") for i in range(2)] + [dead_job(name, "d1")])
    put_runs(board.plane, [run_value("ok"), run_value("bad", status="failed")])


def hrefs(body: str) -> set[str]:
    return {html.unescape(found) for found in re.findall(r'href="([^"]*)"', body)}


def test_the_jobs_page_links_each_queues_tabs_and_dead_letters(board: Board):
    seed_queues(board)
    body = board.viewer.get(reverse("oqronboard:queues")).content.decode()
    links = hrefs(body)
    dead_letters = reverse("oqronboard:dead-letters")
    for name in QUEUES:
        jobs = reverse("oqronboard:queue-jobs", args=[name])
        assert {jobs, f"{jobs}?status=waiting", f"{jobs}?status=delayed", f"{jobs}?status=active"} <= links, name
        assert any(link.startswith(f"{dead_letters}?queue=") and link.endswith(_quoted(name)) for link in links), name


def test_the_overview_links_each_queue_its_dead_letters_and_the_runs(board: Board):
    seed_queues(board)
    body = board.viewer.get(reverse("oqronboard:home")).content.decode()
    links = hrefs(body)
    dead_letters, runs = reverse("oqronboard:dead-letters"), reverse("oqronboard:runs")
    for name in QUEUES:
        assert reverse("oqronboard:queue-jobs", args=[name]) in links, name
        assert f"{dead_letters}?queue={_quoted(name)}" in links, name
    assert {f"{runs}?status=completed&window=1h", f"{runs}?status=failed&window=1h"} <= links
    assert body.count('class="spark"><svg class="chart"') == len(QUEUES)  # each queue's last hour, inline


def _quoted(name: str) -> str:
    from urllib.parse import quote

    return quote(name, safe="")  # Django's urlencode filter: "/" quoted as well


@pytest.mark.parametrize("page", ["oqronboard:queues", "oqronboard:api-queues"])
def test_the_pages_that_show_no_chart_draw_none(board: Board, monkeypatch, page: str):
    seed_queues(board)
    drawn: list[str] = []

    def spy(*args: object, **kwargs: object) -> object:
        drawn.append(page)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    real = overview.stacked_bars
    monkeypatch.setattr(overview, "stacked_bars", spy)
    response = board.viewer.get(reverse(page))
    assert response.status_code == 200 and drawn == []
    board.viewer.get(reverse("oqronboard:home"))
    assert len(drawn) == len(QUEUES) + 1  # the overview still draws each queue's and the hour's


def test_the_queues_api_answers_the_overviews_figures_without_a_chart(board: Board):
    seed_queues(board)
    rows = {row["name"]: row for row in board.viewer.get(reverse("oqronboard:api-queues")).json()["queues"]}
    assert set(rows) == set(QUEUES)
    for name in QUEUES:
        assert "chart" not in rows[name] and rows[name]["dead"] == 1
    built = overview.build(board.scope, charts=False)
    assert built.chart is None and all(row.chart is None for row in built.queues)
    assert [(q.name, q.completed, q.failed) for q in built.queues] == [
        (q.name, q.completed, q.failed) for q in overview.build(board.scope).queues]
