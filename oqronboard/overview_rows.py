"""The queue table rows of the overview and of the Jobs page, built here rather than in
a template loop: with a row per queue (46 and 66 in the bench's scope) the loops' 12-25
template nodes a row were most of the pages' rendering time. The markup is the loops'
(tests/board/test_overview_speed.py renders both and compares them)."""

from __future__ import annotations

from html import escape  # the stdlib's: Django's lazy-aware wrapper costs ~10 us a call
from urllib.parse import quote

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from oqronboard.base.urlsafe import SegmentPattern
from oqronboard.row_html import ago_or_none, int_text
from oqronboard.templatetags.board import percent

from .overview import QueueRow

FAILURE_RATE_WARNING = 10  # percent: the rate is shown in red from here


def queue_rows_html(queues: list[QueueRow]) -> SafeString:
    """One ``<tr>`` per queue: every text escaped, each URL pattern reversed once."""
    queue_jobs = SegmentPattern("oqronboard:queue-jobs")
    dead_letters = escape(reverse("oqronboard:dead-letters"))
    rows = []
    for q in queues:
        name = escape(q.name)
        jobs = escape(queue_jobs.fill(q.name))
        paused = '<span class="badge warn">paused</span>' if q.paused else ""
        rows.append(
            f'<tr data-row data-testid="queue-row-{name}">\n'
            f'<th scope="row"><a href="{jobs}" data-open>{name}</a>\n{paused}</th>\n'
            f'<td data-label="Waiting" class="num" data-testid="waiting-{name}">{_or_unknown(q.waiting)}</td>\n'
            f'<td data-label="Delayed" class="num">{_or_unknown(q.delayed)}</td>\n'
            f'<td data-label="Active" class="num">{_or_unknown(q.active)}</td>\n'
            f'<td data-label="Dead" class="num"><a href="{dead_letters}?queue={escape(quote(q.name))}" '
            f'data-testid="overview-dead-{name}"{' class="bad"' if q.dead else ""}>{int_text(q.dead)}</a></td>\n'
            f'<td data-label="Oldest waiting">{ago_or_none(q.oldest_waiting_at)}</td>\n'
            f'<td data-label="Last hour" class="spark">{q.chart.svg if q.chart else ""}\n'
            f'<span class="muted small">{int_text(q.completed)} ok · {int_text(q.failed)} failed</span></td>\n'
            f"{_failure_rate(q.failure_rate)}\n"
            f'<td data-label="Workers">{_workers(q, name)}</td>\n'
            "</tr>")
    return mark_safe("\n".join(rows))  # every value above went through escape() or is a number


def jobs_rows_html(queues: list[QueueRow]) -> SafeString:
    """The Jobs page's row per queue: its depths, each a link to its tab, and its state."""
    queue_jobs = SegmentPattern("oqronboard:queue-jobs")
    dead_letters = escape(reverse("oqronboard:dead-letters"))
    rows = []
    for q in queues:
        jobs = escape(queue_jobs.fill(q.name))
        state = '<span class="badge warn">paused</span>' if q.paused else "running"
        unattended = '<span class="badge bad">no live worker</span>' if q.unattended else ""
        rows.append(
            f'<tr data-row>\n<th scope="row"><a href="{jobs}" data-open>{escape(q.name)}</a></th>\n'
            f'<td class="num"><a href="{jobs}?status=waiting">{_or_unknown(q.waiting)}</a></td>\n'
            f'<td class="num"><a href="{jobs}?status=delayed">{_or_unknown(q.delayed)}</a></td>\n'
            f'<td class="num"><a href="{jobs}?status=active">{_or_unknown(q.active)}</a></td>\n'
            f'<td class="num"><a href="{dead_letters}?queue={escape(quote(q.name))}">{int_text(q.dead)}</a></td>\n'
            f"<td>{state}\n{unattended}</td>\n</tr>")
    return mark_safe("\n".join(rows))  # every value above went through escape() or is a number


def _or_unknown(value: int | None) -> str:
    return "?" if value is None else int_text(value)


def _failure_rate(rate: float | None) -> str:
    css = "num bad" if rate and rate >= FAILURE_RATE_WARNING else "num"
    shown = '<span class="muted">\N{EN DASH}</span>' if rate is None else escape(percent(rate))
    return f'<td data-label="Failure rate" class="{css}">{shown}</td>'


def _workers(q: QueueRow, name: str) -> str:
    if q.workers:
        return int_text(q.workers)
    if q.unattended:
        return f'<span class="badge bad" data-testid="unattended-{name}">no live worker</span>'
    return '<span class="muted">0</span>'
