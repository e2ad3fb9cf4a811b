"""A queue's job list rows, built here rather than in a template loop: a page of 50
jobs through the loop's ~15 template nodes a row (a {% url %} among them) was most of
the queue page's rendering. The markup is the loop's (tests/board/test_overview_speed.py
renders both and compares them)."""

from __future__ import annotations

from html import escape  # the stdlib's: Django's lazy-aware wrapper costs ~10 us a call
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from oqronboard.base.urlsafe import SegmentPattern
from oqronboard.row_html import cut_text, value_text
from oqronboard.templatetags.board import ago, ms_iso


def job_rows_html(queue: str, rows: list[dict[str, Any]]) -> SafeString:
    """One ``<tr>`` per job of ``rows`` (queries.queue_jobs's): every text escaped, the
    job URL reversed once and each id put in as the seg converter encodes it."""
    job_url = SegmentPattern("oqronboard:job", 2)
    parts = []
    for job in rows:
        url = escape(job_url.fill(queue, str(job["id"])))
        created, run_at = job.get("created"), job.get("run_at")
        error = job.get("error_message")
        parts.append(
            f'<tr data-row data-testid="job-row">\n'
            f'<td><a href="{url}" data-open><code>{escape(str(job["id"]))}</code></a></td>\n'
            f'<td><time datetime="{escape(ms_iso(created))}">{escape(ago(created))}</time></td>\n'
            f"<td>{escape(ago(run_at)) if run_at else ''}</td>\n"
            f'<td class="num">{_shown(job.get("attempts"), 0)}/{_shown(job.get("max_attempts"), "?")}</td>\n'
            f'<td class="num">{_shown(job.get("priority"), 0)}</td>\n'
            f'<td class="error-cell">{cut_text("" if error is None else error, 120)}</td>\n'
            "</tr>")
    return mark_safe("\n".join(parts))  # every value above went through escape()


def _shown(value: Any, default: Any) -> str:
    """What ``{{ value|default_if_none:default }}`` prints."""
    return value_text(default if value is None else value)
