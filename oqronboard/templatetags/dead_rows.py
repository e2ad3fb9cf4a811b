"""``{% dead_rows rows %}``: the dead-letter list's rows as HTML, built in Python.

The same markup the template's loop gave, at a fraction of its cost: a page of 50 rows
rendered ~20 template nodes and 6 filters a row (about a third of the page's CPU).
Every value goes through :func:`html.escape`; the row's job URL comes precomputed
(``dead._add_job_urls``), the CSRF field and the operator's controls from the context.
"""

from __future__ import annotations

from html import escape  # the stdlib's: Django's lazy-aware wrapper costs ~10 us a call
from typing import Any

from django import template
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from oqronboard.row_html import ago_time, csrf_input, cut_text

register = template.Library()


def _text(value: Any) -> str:
    return escape(str(value))


@register.simple_tag(takes_context=True)
def dead_rows(context: template.Context, rows: list[dict[str, Any]]) -> SafeString:
    operator = bool(context.get("is_operator"))
    csrf = csrf_input(context.get("csrf_token"))
    retry = escape(reverse("oqronboard:dead-retry")) if operator else ""
    parts = []
    for d in rows:
        job_id, queue_and_id = _text(d["id"]), f"{_text(d['queue'])}:{_text(d['id'])}"
        died = d.get("died")
        message = d.get("error_message")
        if message is None:
            message = d.get("reason")
        error_type = d.get("error_type")
        attempts = d.get("attempts")
        select = (f'<td><input type="checkbox" name="ids" value="{queue_and_id}" form="dead-bulk" '
                  f'aria-label="Select {job_id}"></td>' if operator else "")
        action = (f'<td>\n            <form method="post" action="{retry}" hx-post="{retry}" hx-target="closest tr" '
                  f'hx-swap="outerHTML" class="inline">\n              {csrf}<input type="hidden" name="mode" '
                  f'value="ids"><input type="hidden" name="ids" value="{queue_and_id}">\n              '
                  f'<button type="submit" data-testid="retry-{job_id}" data-retry>Retry</button>\n'
                  f"            </form></td>" if operator else "")
        parts.append(
            f'<tr data-row data-testid="dead-row" data-job-id="{job_id}">\n          {select}\n'
            f'          <td class="small">{ago_time(died)}</td>\n'
            f"          <td>{_text(d['queue'])}</td>\n"
            f'          <td><a href="{_text(d["url"])}" data-open><code>{cut_text(d["id"], 32)}</code></a></td>\n'
            f'          <td class="error-cell"><strong>{"" if error_type is None else _text(error_type)}</strong> '
            f"{cut_text(message, 160)}</td>\n"
            f'          <td class="num opt">{"" if attempts is None else _text(attempts)}</td>\n'
            f"          {action}\n        </tr>")
    return mark_safe("\n".join(parts))  # every value above went through escape()
