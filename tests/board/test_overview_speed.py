"""Issue 37 item 6 for the overview, the Jobs page and the queues API: what was changed
for speed shows what it showed before (the timing itself is bench/board_pages.py's)."""

from __future__ import annotations

import html
import re

import pytest
from django.template import Context, Template
from django.urls import reverse

from oqronboard import overview
from oqronboard.charts import stacked_bars
from oqronboard.job_rows import job_rows_html
from oqronboard.overview import QueueRow
from oqronboard.overview_rows import jobs_rows_html, queue_rows_html
from oqronkit.clock import now_ms
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

    return quote(name)  # what Django's urlencode filter writes


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


# The overview's queue rows as the template loop drew them (overview_rows.py builds them now).
ROWS_TEMPLATE = """{% load board %}{% for q in queues %}
<tr data-row data-testid="queue-row-{{ q.name }}">
<th scope="row"><a href="{% url 'oqronboard:queue-jobs' q.name %}" data-open>{{ q.name }}</a>
{% if q.paused %}<span class="badge warn">paused</span>{% endif %}</th>
<td data-label="Waiting" class="num" data-testid="waiting-{{ q.name }}">{{ q.waiting|default_if_none:"?" }}</td>
<td data-label="Delayed" class="num">{{ q.delayed|default_if_none:"?" }}</td>
<td data-label="Active" class="num">{{ q.active|default_if_none:"?" }}</td>
<td data-label="Dead" class="num"><a href="{% url 'oqronboard:dead-letters' %}?queue={{ q.name|urlencode }}" \
data-testid="overview-dead-{{ q.name }}"{% if q.dead %} class="bad"{% endif %}>{{ q.dead }}</a></td>
<td data-label="Oldest waiting">{% if q.oldest_waiting_at %}<time datetime="{{ q.oldest_waiting_at|ms_iso }}" \
title="{{ q.oldest_waiting_at|ms_time }}">{{ q.oldest_waiting_at|ago }}</time>{% else %}<span class="muted">none</span>\
{% endif %}</td>
<td data-label="Last hour" class="spark">{{ q.chart.svg }}
<span class="muted small">{{ q.completed }} ok · {{ q.failed }} failed</span></td>
<td data-label="Failure rate" class="num{% if q.failure_rate and q.failure_rate >= 10 %} bad{% endif %}">\
{% if q.failure_rate is not None %}{{ q.failure_rate|percent }}{% else %}<span class="muted">\N{EN DASH}</span>\
{% endif %}</td>
<td data-label="Workers">{% if q.workers %}{{ q.workers }}{% elif q.unattended %}<span class="badge bad" \
data-testid="unattended-{{ q.name }}">no live worker</span>{% else %}<span class="muted">0</span>{% endif %}</td>
</tr>
{% endfor %}"""


def every_kind_of_row() -> list[QueueRow]:
    chart = stacked_bars([(3, 1), (0, 0), (12345, 2)], labels=["a", "b", "c"])
    return [
        QueueRow("emails", paused=True, waiting=4, delayed=1, active=0, dead=1, oldest_waiting_at=now_ms() - 5400_000,
                 completed=6, failed=2, workers=2, chart=chart),
        QueueRow('<b>"x" & \'y\'</b>', waiting=None, delayed=None, active=None, dead=0, chart=chart),  # hot plane down
        QueueRow("mail out/é", waiting=1, completed=95, failed=5, workers=0, chart=chart),  # unattended, 5 %
        QueueRow("failed", waiting=12345678, completed=0, failed=3, dead=1234567, workers=1234, chart=chart),
        QueueRow("~tilde:colon", paused=True, waiting=2, chart=chart),  # paused: not unattended
    ]


# The Jobs page's queue rows as its template loop drew them (overview_rows.jobs_rows_html builds them now).
JOBS_ROWS_TEMPLATE = """{% url 'oqronboard:dead-letters' as dead_letters_url %}{% for q in queues %}
<tr data-row>{% url 'oqronboard:queue-jobs' q.name as queue_url %}
<th scope="row"><a href="{{ queue_url }}" data-open>{{ q.name }}</a></th>
<td class="num"><a href="{{ queue_url }}?status=waiting">{{ q.waiting|default_if_none:"?" }}</a></td>
<td class="num"><a href="{{ queue_url }}?status=delayed">{{ q.delayed|default_if_none:"?" }}</a></td>
<td class="num"><a href="{{ queue_url }}?status=active">{{ q.active|default_if_none:"?" }}</a></td>
<td class="num"><a href="{{ dead_letters_url }}?queue={{ q.name|urlencode }}">{{ q.dead }}</a></td>
<td>{% if q.paused %}<span class="badge warn">paused</span>{% else %}running{% endif %}
{% if q.unattended %}<span class="badge bad">no live worker</span>{% endif %}</td>
</tr>
{% endfor %}"""


@pytest.mark.parametrize("grouping", [False, True])
@pytest.mark.parametrize(("template", "built"), [(ROWS_TEMPLATE, queue_rows_html),
                                                 (JOBS_ROWS_TEMPLATE, jobs_rows_html)], ids=["overview", "jobs-page"])
def test_the_queue_rows_are_the_markup_the_template_loop_drew(settings, grouping: bool, template: str, built):
    settings.USE_THOUSAND_SEPARATOR = grouping
    queues = every_kind_of_row()
    before = Template(template).render(Context({"queues": queues}))
    after = str(built(queues))
    assert _squash(after) == _squash(before)
    assert ("12,345,678" in after) is grouping and "&lt;b&gt;&quot;x&quot; &amp; &#x27;y&#x27;&lt;/b&gt;" in after
    assert "mail%20out/%C3%A9" in after and "no live worker" in after


def _squash(markup: str) -> str:
    return re.sub(r"\s*\n\s*", "\n", markup).replace("&#39;", "&#x27;").strip()


# A queue's job rows as the template loop drew them (job_rows.py builds them now).
JOB_ROWS_TEMPLATE = """{% load board %}{% for job in rows %}
<tr data-row data-testid="job-row">
<td><a href="{% url 'oqronboard:job' queue job.id %}" data-open><code>{{ job.id }}</code></a></td>
<td><time datetime="{{ job.created|ms_iso }}">{{ job.created|ago }}</time></td>
<td>{% if job.run_at %}{{ job.run_at|ago }}{% endif %}</td>
<td class="num">{{ job.attempts|default_if_none:0 }}/{{ job.max_attempts|default_if_none:"?" }}</td>
<td class="num">{{ job.priority|default_if_none:0 }}</td>
<td class="error-cell">{{ job.error_message|default_if_none:""|truncatechars:120 }}</td>
</tr>
{% endfor %}"""


@pytest.mark.parametrize("grouping", [False, True])
def test_the_job_rows_are_the_markup_the_template_loop_drew(settings, grouping: bool):
    settings.USE_THOUSAND_SEPARATOR = grouping
    now = now_ms()
    rows = [
        # Instants an hour or more away: ago() shows minutes there, steady while both render.
        {"id": "01a24a13a47c", "created": now - 5_430_000, "run_at": now + 7_230_000, "attempts": 2, "max_attempts": 5,
         "priority": 10, "error_message": "boom"},
        {"id": 'a/b <"c"> & \'d\'', "created": None, "run_at": None, "attempts": None, "max_attempts": None,
         "priority": None, "error_message": None},
        {"id": "failed", "created": now - 86_430_000, "run_at": 0, "attempts": 12345, "max_attempts": 99999,
         "priority": -3, "error_message": "é<b>" * 100},
    ]
    for queue in ("emails", "mail out/é"):
        before = Template(JOB_ROWS_TEMPLATE).render(Context({"rows": rows, "queue": queue}))
        after = str(job_rows_html(queue, rows))
        assert _squash(after) == _squash(before)
        assert ("12,345" in after) is grouping and "&lt;&quot;c&quot;&gt; &amp; &#x27;d&#x27;" in after


def test_a_queue_page_lists_its_jobs_or_says_it_has_none(board: Board):
    seed_queues(board)
    url = reverse("oqronboard:queue-jobs", args=["mail out"])
    body = board.viewer.get(url, {"status": "waiting"}).content.decode()
    for job_id in ("w-0", "w-1"):
        assert reverse("oqronboard:job", args=["mail out", job_id]) in hrefs(body)
    assert body.count('data-testid="job-row"') == 2 and "No waiting job" not in body
    empty = board.viewer.get(url, {"status": "delayed"}).content.decode()
    assert 'data-testid="job-row"' not in empty and "No delayed job in mail out." in empty
