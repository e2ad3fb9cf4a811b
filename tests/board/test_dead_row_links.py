"""The dead-letter list's links are the ones ``reverse`` gives, though built once per
request rather than per row: job ids the ``seg`` converter escapes included."""

from __future__ import annotations

import html
import re
from pathlib import Path

from django.urls import reverse

from oqronkit.clock import now_ms
from tests.board.seed import Board, dead_job, put_jobs

IDS = ("plain-1", "a/b", "retry", "naïve id", "..")


def test_each_rows_job_link_and_retry_form_are_the_reversed_urls(board: Board):
    now = now_ms()
    put_jobs(board.plane, [dead_job("emails", job_id, died=now - i) for i, job_id in enumerate(IDS)])
    body = board.operator.get(reverse("oqronboard:dead-letters")).content.decode()
    links = [html.unescape(href) for href in re.findall(r'<a href="([^"]+)" data-open>', body)]
    assert links == [reverse("oqronboard:job", args=["emails", job_id]) for job_id in IDS]
    retry = reverse("oqronboard:dead-retry")
    assert body.count(f'action="{retry}" hx-post="{retry}"') == len(IDS)
    for link in links:
        assert board.viewer.get(link).status_code == 200


def test_the_list_reverses_no_url_per_row(board: Board, monkeypatch):
    """``{% url %}`` calls ``django.urls.reverse`` as it renders: as often for 5 rows as for 1."""
    import django.urls

    calls: list[str] = []

    def counting(viewname, *args, **kwargs):
        calls.append(viewname)
        return reverse(viewname, *args, **kwargs)

    monkeypatch.setattr(django.urls, "reverse", counting)  # {% url %} imports it as it renders
    url = reverse("oqronboard:dead-letters")
    counts = []
    for n in (1, 5):
        put_jobs(board.plane, [dead_job("emails", f"j{n}-{i}", died=now_ms() - i) for i in range(n)])
        calls.clear()
        board.operator.get(url, {"panel": "list"}, HTTP_HX_REQUEST="true")
        counts.append(len(calls))
    assert counts[0] == counts[1]


# The template's loop as it was before {% dead_rows %}: the tag must give the same markup.
LOOP = "{% load board %}" + (Path(__file__).parent / "dead_rows_loop.html").read_text()


def _squeezed(html_text: str) -> str:
    return re.sub(r">\s+<", "><", html_text).strip()


def test_the_rows_tag_gives_the_markup_the_template_loop_gave(monkeypatch):
    from django.template import Context, Template

    from oqronboard.templatetags import board as filters

    now = now_ms()
    monkeypatch.setattr(filters, "now_ms", lambda: now)  # "ago" the same in both renderings
    rows = [
        {"id": "plain-1", "queue": "emails", "url": "/dead/job/1", "died": now - 5000, "error_type": "ValueError",
         "error_message": "boom " * 50, "reason": "failed", "attempts": 3},
        {"id": '<b>"x"&y' + "z" * 40, "queue": "q<1>", "url": "/j?a=1&b=2", "died": None, "error_type": None,
         "error_message": None, "reason": "dead: <timeout>", "attempts": None},
        {"id": "n", "queue": "sms", "url": "/n", "died": now, "error_type": "E", "error_message": None,
         "reason": None, "attempts": 0},
    ]
    for operator in (True, False):
        context = {"rows": rows, "is_operator": operator, "csrf_token": "tok<en>", "filters": {}}
        old = Template(LOOP).render(Context(context))
        new = Template("{% load dead_rows %}{% dead_rows rows %}").render(Context(context))
        assert _squeezed(new) == _squeezed(old), operator
